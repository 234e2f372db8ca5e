// A check of policy text before toml++ parses it. toml++ 3.3 (Debian 12) reaches an assert,
// an assume or __builtin_unreachable() on some malformed input: an abort in a debug build and
// undefined behaviour in a release one, inside the app the shim is preloaded into; and it
// recurses once per level of nesting, without a bound that fits a stack. The guard rejects
// those inputs with a one-line reason and its position. (The size of a policy is bounded where
// it is read: kMaxPolicyBytes in policy_loader.hpp.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tcptune::config {

// The deepest a policy may nest, in levels: each part of a table header, each part of a dotted
// key, each array and each inline table is one, counted from the root along the text (a key
// below a header starts at the header's depth; what an array or inline table holds is one level
// deeper than it). The policy's own schema nests 5 deep ([[rule]] sockopt = [{ level = ... }]).
// This bounds every recursion toml++ 3.3 runs on the text (parser.inl, table.inl, array.inl):
//  - parse_value -> parse_array -> parse_value, and parse_value -> parse_inline_table ->
//    parse_key_value_pair_and_insert -> parse_value: one round per open bracket, so at most 63
//    (the key holding the outermost value takes a level). toml++'s own bound is 256
//    (TOML_MAX_NESTED_VALUES). parse_key, parse_table_header and parse_document loop.
//  - The tree is as deep as the text nests: a table per key part (a dotted key's, or a header's,
//    two nodes where the part names an array of tables), a node per array and inline table, so
//    at most 2 x 64 + 1 nodes from the root. update_region_ends(root) recurses down it after
//    every parse, failed ones too; destroying the tree (~table, ~array through node_ptr)
//    recurses down it as well, plus std::map's _M_erase down each table's right spine, at most
//    2 log2(keys + 1) frames per table.
//  - Nothing else recurses: no deep copy, comparison or printing of the tree happens here, and
//    the loader reads fixed levels ([defaults], [[rule]], match, keep_warm).
// Worst cases measured (fuzz.toml_depth.TomlDepth.WorstCasesFitThePrivateStack), of the 1 MiB
// the load runs on (kPolicyStackBytes): 63 nested arrays 76 KiB in a release build (gcc 12,
// -O2; about 1.1 KiB per level), 212 KiB with ASan (clang -O1, gcc -O0); 64 key or header
// parts 12 KiB; 63 levels of arrays of tables of 1500 keys each 16 KiB. Without the bound one
// level took 52 bytes or more: 20,000 dotted key parts overflowed a 1 MiB stack.
inline constexpr std::uint32_t kMaxTomlDepth = 64;

struct TomlInputProblem {
  std::uint32_t line = 0;    // 1-based
  std::uint32_t column = 0;  // 1-based, in code points as toml++ counts them
  std::string message;       // one line, without the position
};

// The first reason not to hand `text` to toml++, or nullopt when it may parse it. Rejects only
// text that is not valid TOML 1.0, except a non-ASCII character first after a line-ending
// backslash in a multi-line string, which toml++ 3.3 itself mishandles.
std::optional<TomlInputProblem> find_toml_input_problem(std::string_view text);

}  // namespace tcptune::config

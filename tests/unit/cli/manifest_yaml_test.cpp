// The pieces of kube-inject's text transform: positions from libyaml's marks as bytes, edits in
// block and flow style that come out again byte for byte, and scalars that read back as strings.
#include <gtest/gtest.h>

#include <string>

#include "text_edits.hpp"
#include "yaml_edits.hpp"
#include "yaml_outline.hpp"
#include "yaml_snippet.hpp"

namespace tcptune::cli {
namespace {

TEST(YamlOutline, PositionsAreBytesPastMultibyteCharacters) {
  const std::string text = "a: \xC3\xA9\xE6\x97\xA5\nkey: value  # \xF0\x9F\x98\x80\nlist: [x, \"y\"]\n";
  const std::vector<YamlDocument> documents = read_yaml_outline(text);
  ASSERT_EQ(documents.size(), 1U);
  const YamlDocument& document = documents[0];
  const int value = document.value_of(document.root, "key");
  ASSERT_GE(value, 0);
  EXPECT_EQ(text.substr(document.node(value).start, document.node(value).end - document.node(value).start), "value");
  EXPECT_EQ(document.node(value).line, 2U);
  const int list = document.value_of(document.root, "list");
  EXPECT_EQ(text.substr(document.node(list).start, document.node(list).end - document.node(list).start), "[x, \"y\"]");
  EXPECT_EQ(document.node(list).style, YamlNode::Style::flow);
}

TEST(YamlOutline, BlockCollectionsEndAtTheirLastScalarNotAtTheNextKey) {
  const std::string text = "a:\n- x\n- y   # trailing\n\n# a comment\nb: 1\n";
  const YamlDocument document = read_yaml_outline(text).at(0);
  const YamlNode& list = document.node(document.value_of(document.root, "a"));
  EXPECT_EQ(text.substr(list.start, list.end - list.start), "- x\n- y");
}

TEST(YamlOutline, SyntaxErrorsNameDocumentLineAndColumn) {
  try {
    read_yaml_outline("a: 1\n---\nb: [1\n");
    FAIL() << "no error";
  } catch (const ManifestError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("document 2, line 4, column 1: ", 0), 0U) << error.what();
  }
  EXPECT_THROW(read_yaml_outline(std::string("\xFF\xFE"
                                             "a\0",
                                             4)),
               ManifestError);
}

TEST(YamlOutline, AByteOrderMarkLeavesTheFirstLineWhereItIs) {
  const std::string text = "\xEF\xBB\xBFkind: Pod\nspec: {}\n";
  const YamlDocument document = read_yaml_outline(text).at(0);
  const int kind = document.value_of(document.root, "kind");
  ASSERT_GE(kind, 0);
  EXPECT_EQ(text.substr(document.node(kind).start, 3), "Pod");
  EXPECT_EQ(document.node(document.key_of(document.root, "kind")).column, 1U);
}

// YAML ends a line there, the edits would not: refused where it is, "\r\n" read as always.
TEST(YamlOutline, ACarriageReturnAloneIsRefusedWhereItIs) {
  const auto error_of = [](const std::string& text) {
    try {
      read_yaml_outline(text);
    } catch (const ManifestError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("a: 1\r\n---\nb: 2\r\nc: 3\rd: 4\n")
                .rfind("document 2, line 4, column 5: a line ends in a "
                       "carriage return alone",
                       0),
            0U)
      << error_of("a: 1\r\n---\nb: 2\r\nc: 3\rd: 4\n");
  EXPECT_EQ(error_of("\xEF\xBB\xBF"
                     "a: 1\r")
                .rfind("document 1, line 1, column 5: ", 0),
            0U);
  EXPECT_NO_THROW(read_yaml_outline("kind: Pod\r\nspec: {}\r\n"));
}

TEST(YamlOutline, NestingPastAThousandIsRefused) {
  EXPECT_NO_THROW(read_yaml_outline(std::string(1000, '[') + std::string(1000, ']')));
  EXPECT_THROW(read_yaml_outline(std::string(1001, '[') + std::string(1001, ']')), ManifestError);
}

TEST(TextEdits, OverlappingDeletionsDeleteTheirUnion) {
  // Two flow entries taken out side by side: "b" through the separator before "c", and "c"
  // from the end of "b".
  EXPECT_EQ(apply_text_edits("{a: 1, b: 2, c: 3}", {{7, 13, ""}, {11, 17, ""}}), "{a: 1, }");
  EXPECT_THROW(apply_text_edits("abcdef", {{1, 4, ""}, {2, 3, "x"}}), std::logic_error);
}

TEST(TextEdits, AppliedTogetherInOrderAndOverlapsRefused) {
  EXPECT_EQ(apply_text_edits("abcdef", {{4, 4, "Y"}, {1, 3, ""}, {4, 4, "Z"}}), "adYZef");
  EXPECT_THROW(apply_text_edits("abcdef", {{1, 4, ""}, {2, 3, "x"}}), std::logic_error);
}

TEST(YamlSnippet, ScalarsReadBackAsTheSameStrings) {
  EXPECT_EQ(yaml_scalar("/tcptune/libtcptune.so"), "/tcptune/libtcptune.so");
  EXPECT_EQ(yaml_scalar("--supervise"), "--supervise");
  EXPECT_EQ(yaml_scalar("tcptune-init:0.1.0"), "tcptune-init:0.1.0");
  EXPECT_EQ(yaml_scalar("64Mi"), "64Mi");
  for (const char* needs_quotes :
       {"true", "off", "No", "null", "~", "0.1.0", "1e3", "0x1F", "", "a: b", "a #b", "x:", "[a]", "-"}) {
    EXPECT_EQ(yaml_scalar(needs_quotes), Snippet(needs_quotes).dump()) << needs_quotes;
  }
  EXPECT_EQ(yaml_scalar(true), "true");
  EXPECT_EQ(yaml_flow(Snippet{{"name", "v"}, {"emptyDir", Snippet::object()}, {"l", {"a", 1}}}),
            R"({"name": "v", "emptyDir": {}, "l": ["a", 1]})");
}

// Inserting and then removing the same item gives back the original bytes, in each style.
std::string round_trip(const std::string& text, bool block_expected) {
  const YamlDocument document = read_yaml_outline(text).at(0);
  const YamlEditor editor(text, document, BlockLayout{});
  const int list = document.value_of(document.root, "l");
  const bool block = document.node(list).style == YamlNode::Style::block;
  EXPECT_EQ(block, block_expected) << text;
  const std::string inserted = apply_text_edits(text, {editor.insert_first_items(list, {Snippet{{"k", "v"}}, "w"})});
  const YamlDocument again = read_yaml_outline(inserted).at(0);
  const YamlEditor again_editor(inserted, again, BlockLayout{});
  const int again_list = again.value_of(again.root, "l");
  EXPECT_EQ(again.node(again_list).children.size(), document.node(list).children.size() + 2) << inserted;
  EXPECT_EQ(again.scalar(again.value_of(again.node(again_list).children[0], "k")), "v") << inserted;
  EXPECT_EQ(apply_text_edits(inserted, {again_editor.remove_items(again_list, 0, 2)}), text) << inserted;
  return inserted;
}

TEST(YamlEditor, FirstItemsInAndOutAgainInEachStyle) {
  EXPECT_EQ(round_trip("l:\n- a\n- b\n", true), "l:\n- k: v\n- w\n- a\n- b\n");
  EXPECT_EQ(round_trip("l:\n  - a  # c\nz: 1\n", true), "l:\n  - k: v\n  - w\n  - a  # c\nz: 1\n");
  EXPECT_EQ(round_trip("l: [a, b]\n", false), "l: [{\"k\": \"v\"}, \"w\", a, b]\n");
  EXPECT_EQ(round_trip("l: [ ]\n", false), "l: [{\"k\": \"v\"}, \"w\" ]\n");
}

TEST(YamlEditor, NewEntriesGoAboveTheCommentsOfTheKeyTheyPrecede) {
  const std::string text = "spec:\n  # the app\n  containers:\n  - name: a\n";
  const YamlDocument document = read_yaml_outline(text).at(0);
  const YamlEditor editor(text, document, BlockLayout{});
  const int spec = document.value_of(document.root, "spec");
  const std::string inserted =
      apply_text_edits(text, {editor.insert_entry(spec, "volumes", Snippet::array({{{"name", "t"}}}), "containers")});
  EXPECT_EQ(inserted, "spec:\n  volumes:\n  - name: t\n  # the app\n  containers:\n  - name: a\n");
  const YamlDocument again = read_yaml_outline(inserted).at(0);
  const YamlEditor again_editor(inserted, again, BlockLayout{});
  const int again_spec = again.value_of(again.root, "spec");
  EXPECT_EQ(apply_text_edits(inserted, {again_editor.remove_entry(again_spec, again.key_of(again_spec, "volumes"))}),
            text);
}

TEST(YamlEditor, FirstItemsOfASequenceWithATagOrAnAnchor) {
  for (const std::string property : {"!!seq", "&list", "&list # a comment\n  # another"}) {
    const std::string text = "a: " + property + "\n- x\n";
    const YamlDocument document = read_yaml_outline(text).at(0);
    const YamlEditor editor(text, document, BlockLayout{});
    const std::string inserted = apply_text_edits(
        text, {editor.insert_first_items(document.value_of(document.root, "a"), std::vector<Snippet>{Snippet("w")})});
    EXPECT_EQ(inserted, "a: " + property + "\n- w\n- x\n");
  }
}

TEST(YamlEditor, ScalarPrefixInsideQuotes) {
  const std::string text = "a: \"x y\"\nb: 'z'\nc: plain\nd: |\n  block\n";
  const YamlDocument document = read_yaml_outline(text).at(0);
  const YamlEditor editor(text, document, BlockLayout{});
  const std::string edited =
      apply_text_edits(text, {editor.prefix_scalar(document.value_of(document.root, "a"), "P:"),
                              editor.prefix_scalar(document.value_of(document.root, "b"), "P:"),
                              editor.prefix_scalar(document.value_of(document.root, "c"), "P:")});
  EXPECT_EQ(edited, "a: \"P:x y\"\nb: 'P:z'\nc: P:plain\nd: |\n  block\n");
  EXPECT_THROW(editor.prefix_scalar(document.value_of(document.root, "d"), "P:"), ManifestError);
  const YamlDocument again = read_yaml_outline(edited).at(0);
  const YamlEditor again_editor(edited, again, BlockLayout{});
  TextEdit edit;
  ASSERT_TRUE(again_editor.unprefix_scalar(again.value_of(again.root, "a"), "P:", edit));
  EXPECT_EQ(apply_text_edits(edited, {edit}), "a: \"x y\"\nb: 'P:z'\nc: P:plain\nd: |\n  block\n");
  EXPECT_FALSE(again_editor.unprefix_scalar(again.value_of(again.root, "d"), "P:", edit));
}

}  // namespace
}  // namespace tcptune::cli

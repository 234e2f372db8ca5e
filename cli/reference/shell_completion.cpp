#include "shell_completion.hpp"

#include <string_view>

namespace tcptune::cli {

namespace {

std::string_view kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::file: return "file";
    case ValueKind::directory: return "directory";
    case ValueKind::program: return "program";
    case ValueKind::preset: return "preset";
    case ValueKind::service: return "service";
    case ValueKind::choices: return "choices";
    case ValueKind::none: break;
  }
  return "text";
}

// Names, choices and descriptions are CLI11's and ours: words of letters, digits and '-'. Quoted
// all the same, as bash's single quotes take anything but a quote.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) {
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

std::string option_names(const CommandReference& command) {
  std::vector<std::string> names;
  for (const OptionReference& option : command.options) {
    names.insert(names.end(), option.names.begin(), option.names.end());
  }
  return joined(names);
}

// The shell functions, the same for every command line: they read the tables written before them.
constexpr std::string_view kFunctions = R"bash(
# The presets beside the tcptune being completed: PREFIX/share/tcptune/presets for PREFIX/bin/tcptune,
# links followed as tcptune follows them (/proc/self/exe).
_tcptune_presets() {
  local bin file
  bin=$(type -P -- "$1") || return
  bin=$(readlink -f -- "$bin") || return
  for file in "${bin%/*}/../share/tcptune/presets"/*.toml; do
    [[ -f $file ]] || continue
    file=${file##*/}
    printf '%s\n' "${file%.toml}"
  done
}

# The services systemd knows, by unit file (no running systemd needed).
_tcptune_services() {
  systemctl list-unit-files --type=service --no-legend --no-pager 2>/dev/null | while read -r unit _; do
    printf '%s\n' "$unit"
  done
}

_tcptune_value() {  # KIND CURRENT [CHOICES]
  case $1 in
    file) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$2") ;;
    directory) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$2") ;;
    program)
      compopt -o filenames 2>/dev/null
      if [[ $2 == */* ]]; then mapfile -t COMPREPLY < <(compgen -f -- "$2")
      else mapfile -t COMPREPLY < <(compgen -c -- "$2"); fi ;;
    preset) mapfile -t COMPREPLY < <(compgen -W "$(_tcptune_presets "${COMP_WORDS[0]}")" -- "$2") ;;
    service) mapfile -t COMPREPLY < <(compgen -W "$(_tcptune_services)" -- "$2") ;;
    choices) mapfile -t COMPREPLY < <(compgen -W "$3" -- "$2") ;;
  esac
}

_tcptune() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} command= word i
  local value_next=0 program_at=0
  COMPREPLY=()
  # The subcommand, and where the program of run and ab starts (after -- or at the first
  # positional); an option's value is never either ("--log=FILE" comes as --log, =, FILE).
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if ((value_next)); then
      [[ $word == = ]] || value_next=0
      continue
    fi
    if [[ -z $command ]]; then
      [[ $word == -* ]] || command=$word
      continue
    fi
    if [[ $word == -* ]]; then
      [[ $word != -- && -n ${_tcptune_value_kinds["$command $word"]} ]] && value_next=1
      [[ $word == -- && ${_tcptune_positionals[$command]} == program ]] && { program_at=$((i + 1)); break; }
      continue
    fi
    [[ ${_tcptune_positionals[$command]} == program ]] && { program_at=$i; break; }
  done
  if [[ -z $command ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$_tcptune_commands ${_tcptune_options[tcptune]}" -- "$cur")
    return
  fi
  if ((program_at)); then
    if ((program_at == COMP_CWORD)); then
      _tcptune_value program "$cur"
    elif declare -F _command_offset >/dev/null; then
      _command_offset "$program_at"  # bash-completion's: the program's own completion
    else
      _tcptune_value file "$cur"
    fi
    return
  fi
  if [[ $cur == = ]]; then
    cur=
  elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  fi
  local kind=${_tcptune_value_kinds["$command $prev"]}
  if [[ -n $kind ]]; then
    _tcptune_value "$kind" "$cur" "${_tcptune_choices["$command $prev"]}"
  elif [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${_tcptune_options[$command]}" -- "$cur")
  else
    _tcptune_value "${_tcptune_positionals[$command]}" "$cur"
  fi
}

complete -F _tcptune tcptune
)bash";

}  // namespace

std::string bash_completion(const CommandLineReference& reference) {
  std::string commands;
  std::string options = "declare -gA _tcptune_options=(\n  [tcptune]=" + quoted(option_names(reference.top)) + "\n";
  std::string kinds = "declare -gA _tcptune_value_kinds=(\n";
  std::string choices = "declare -gA _tcptune_choices=(\n";
  std::string positionals = "declare -gA _tcptune_positionals=(\n";
  for (const CommandReference& command : reference.commands) {
    commands += (commands.empty() ? "" : " ") + command.name;
    options += "  [" + command.name + "]=" + quoted(option_names(command)) + "\n";
    for (const OptionReference& option : command.options) {
      if (option.value_name.empty()) {
        continue;  // a flag
      }
      for (const std::string& name : option.names) {
        kinds += "  [" + quoted(command.name + " " + name) + "]=" + std::string(kind_name(option.kind)) + "\n";
        if (option.kind == ValueKind::choices) {
          choices += "  [" + quoted(command.name + " " + name) + "]=" + quoted(joined(option.choices)) + "\n";
        }
      }
    }
    if (!command.positionals.empty()) {
      positionals += "  [" + command.name + "]=" + std::string(kind_name(command.positionals.front().kind)) + "\n";
    }
  }
  return "# bash completion for tcptune, generated from its command line (cli/reference): edits here are lost.\n"
         "_tcptune_commands=" +
         quoted(commands) + "\n" + options + ")\n" + kinds + ")\n" + choices + ")\n" + positionals + ")\n" +
         std::string(kFunctions);
}

}  // namespace tcptune::cli

namespace tcptune::cli {

namespace {

// The first clause of a description, for zsh's one-line listings: "policy file".
std::string short_description(const std::string& description) {
  std::string out = description.substr(0, description.find_first_of(";("));
  while (!out.empty() && (out.back() == ' ' || out.back() == ',')) {
    out.pop_back();
  }
  return out;
}

// Inside an _arguments spec's [description]: brackets and a backslash are escaped.
std::string bracketed(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '[' || c == ']' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out;
}

std::string zsh_action(ValueKind kind, const std::vector<std::string>& choices) {
  switch (kind) {
    case ValueKind::file: return "_files";
    case ValueKind::directory: return "_files -/";
    case ValueKind::program: return "_command_names -e";
    case ValueKind::preset: return "_tcptune_presets";
    case ValueKind::service: return "_tcptune_services";
    case ValueKind::choices: return "(" + joined(choices) + ")";
    case ValueKind::none: break;
  }
  return " ";
}

std::string option_spec(const OptionReference& option) {
  std::string names;
  std::string exclusive;
  if (option.names.size() > 1) {
    exclusive = "(" + joined(option.names) + ")";
    names = "{";
    for (const std::string& name : option.names) {
      names += (names.size() > 1 ? "," : "") + name;
    }
    names += "}";
  } else {
    names = option.names.front();
  }
  // --policy= takes "--policy FILE" and "--policy=FILE"; -f+ "-f FILE" and "-fFILE".
  std::string spec;
  const std::string tail = bracketed(short_description(option.description));
  if (option.value_name.empty()) {
    spec = "[" + tail + "]";
  } else {
    spec = "[" + tail + "]:" + option.value_name + ":" + zsh_action(option.kind, option.choices);
  }
  if (option.names.size() > 1) {
    std::string out = quoted(exclusive) + "{";
    for (std::size_t i = 0; i < option.names.size(); ++i) {
      const std::string& name = option.names[i];
      out += (i == 0 ? "" : ",") + name + (option.value_name.empty() ? "" : name.rfind("--", 0) == 0 ? "=" : "+");
    }
    return out + "}" + quoted(spec);
  }
  const std::string& name = option.names.front();
  return quoted(name + (option.value_name.empty() ? "" : name.rfind("--", 0) == 0 ? "=" : "+") + spec);
}

std::string positional_specs(const CommandReference& command) {
  std::string out;
  for (const OptionReference& positional : command.positionals) {
    if (positional.kind == ValueKind::program) {
      out += "            " + quoted("(-)1:program:" + zsh_action(positional.kind, {})) + " \\\n";
      out += "            " + quoted("*::argument:_normal") + " \\\n";
    } else {
      out += "            " +
             quoted(std::string(positional.repeats ? "*" : "") + ":" + positional.value_name + ":" +
                    zsh_action(positional.kind, {})) +
             " \\\n";
    }
  }
  return out;
}

constexpr std::string_view kZshHead = R"zsh(#compdef tcptune
# zsh completion for tcptune, generated from its command line (cli/reference): edits here are lost.

# The presets beside the tcptune being completed: PREFIX/share/tcptune/presets for PREFIX/bin/tcptune,
# links followed (:A) as tcptune follows them (/proc/self/exe).
_tcptune_presets() {
  local bin=$_tcptune_bin
  [[ $bin == */* ]] || bin=${commands[$bin]}
  local -a presets
  presets=(${bin:A:h}/../share/tcptune/presets/*.toml(N-.:t:r))
  _wanted presets expl preset compadd -a presets
}

# The services systemd knows, by unit file (no running systemd needed).
_tcptune_services() {
  local -a services
  services=(${${(f)"$(systemctl list-unit-files --type=service --no-legend --no-pager 2>/dev/null)"}%% *})
  _wanted services expl service compadd -a services
}

_tcptune() {
  local curcontext=$curcontext state state_descr line ret=1 _tcptune_bin=${words[1]}
  typeset -A opt_args
)zsh";

}  // namespace

std::string zsh_completion(const CommandLineReference& reference) {
  std::string out(kZshHead);
  out += "  _arguments -C \\\n";
  for (const OptionReference& option : reference.top.options) {
    out += "    " + option_spec(option) + " \\\n";
  }
  out += "    ': :->command' \\\n    '*:: :->argument' && ret=0\n";
  out += "  case $state in\n    command)\n      local -a subcommands\n      subcommands=(\n";
  for (const CommandReference& command : reference.commands) {
    out += "        " + quoted(command.name + ":" + short_description(command.description)) + "\n";
  }
  out += "      )\n      _describe -t commands 'tcptune command' subcommands && ret=0 ;;\n";
  out += "    argument)\n      curcontext=${curcontext%:*:*}:tcptune-$words[1]:\n      case $words[1] in\n";
  for (const CommandReference& command : reference.commands) {
    out += "        " + command.name + ")\n          _arguments -S \\\n";
    for (const OptionReference& option : command.options) {
      out += "            " + option_spec(option) + " \\\n";
    }
    out += positional_specs(command);
    out += "            && ret=0 ;;\n";
  }
  out += "      esac ;;\n  esac\n  return ret\n}\n\n_tcptune \"$@\"\n";
  return out;
}

}  // namespace tcptune::cli

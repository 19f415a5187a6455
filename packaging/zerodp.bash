# bash completion for zerodp: its commands, each command's flags, the names --gpu and --model
# know, and paths for the flags that take a file, all read from the program itself (--help,
# --list-gpus, --list-models), so they are never out of date.
_zerodp() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local program=${COMP_WORDS[0]}
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    local commands
    # The commands are the indented lines under "Subcommands:" or under headings such as
    # "Planner commands:" and "Engine commands:".
    commands=$("$program" --help 2>/dev/null |
      awk '/^([A-Z][a-z]+ commands|Subcommands):$/ {on = 1; next} /^[^ ]/ {on = 0} on && NF {print $1}')
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi
  local command=${COMP_WORDS[1]} help
  help=$("$program" "$command" --help 2>/dev/null) || return
  if [[ $prev == --* ]]; then
    # The flag's line in --help: "  --gpu NAME   ..." names its value; a flag alone has none.
    local value
    value=$(grep -Eo -- "^ +(-[a-z],)?$prev [A-Z][A-Z_,0-9]*" <<<"$help" | awk '{print $2}')
    case $prev:$value in
      --gpu:NAME | --model:NAME)
        local names
        names=$("$program" plan "--list-${prev#--}s" 2>/dev/null | awk 'NR > 1 {print $1}')
        COMPREPLY=($(compgen -W "$names" -- "$cur"))
        return
        ;;
      *:FILE | *:PATH | *:DIR)
        COMPREPLY=($(compgen -f -- "$cur"))
        compopt -o filenames 2>/dev/null
        return
        ;;
      *:?*) return ;;  # a number, a size or a word: nothing to offer
    esac
  fi
  if [[ $cur == -* || -z $cur ]]; then
    local flags
    flags=$(grep -Eo -- '--[a-z0-9][a-z0-9-]*' <<<"$help" | sort -u)
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  fi
}
complete -F _zerodp zerodp

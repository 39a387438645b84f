package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// allCommands are every command of Usage, in its order.
func allCommands() []string {
	var out []string
	for line := range strings.Lines(Usage) {
		if rest, ok := strings.CutPrefix(line, "  baton "); ok {
			name, _, _ := strings.Cut(rest, " ")
			name = strings.TrimSpace(name)
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

var flagName = regexp.MustCompile(`(?:^|[\s\[|])(--?[a-z][a-z-]*)`) // "JSON|--error TEXT" names --error

// commandFlags are the flags command name's help lists, and --api, --help.
func commandFlags(name string) []string {
	h, _ := Help(name)
	usage, _, _ := strings.Cut(h, "\nFlags go")
	var out []string
	for _, m := range flagName.FindAllStringSubmatch(usage, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	if name != "dev" && name != "provision" && !slices.Contains(out, "--api") {
		out = append(out, "--api")
	}
	return append(out, "--help")
}

// Completion returns the completion script of shell (bash, zsh or fish)
// for every command of Usage and its flags.
func Completion(shell string) (string, error) {
	cmds := allCommands()
	var b strings.Builder
	switch shell {
	case "bash":
		b.WriteString("# bash completion for baton: source <(baton completion bash)\n_baton() {\n")
		b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]}\n  if [ \"$COMP_CWORD\" -eq 1 ]; then\n")
		fmt.Fprintf(&b, "    COMPREPLY=($(compgen -W %q -- \"$cur\")); return\n  fi\n  case ${COMP_WORDS[1]} in\n", strings.Join(append(cmds, "--version"), " "))
		for _, c := range cmds {
			fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c, strings.Join(commandFlags(c), " "))
		}
		b.WriteString("  esac\n}\ncomplete -F _baton baton\n")
	case "zsh":
		b.WriteString("#compdef baton\n# zsh completion for baton: baton completion zsh > \"${fpath[1]}/_baton\"\n_baton() {\n")
		b.WriteString("  if (( CURRENT == 2 )); then\n")
		fmt.Fprintf(&b, "    compadd -- %s --version; return\n  fi\n  case ${words[2]} in\n", strings.Join(cmds, " "))
		for _, c := range cmds {
			fmt.Fprintf(&b, "    %s) compadd -- %s ;;\n", c, strings.Join(commandFlags(c), " "))
		}
		b.WriteString("  esac\n}\ncompdef _baton baton\n")
	case "fish":
		b.WriteString("# fish completion for baton: baton completion fish > ~/.config/fish/completions/baton.fish\n")
		b.WriteString("complete -c baton -f\ncomplete -c baton -n __fish_use_subcommand -l version -d 'print the version'\n")
		for _, c := range cmds {
			fmt.Fprintf(&b, "complete -c baton -n __fish_use_subcommand -a %s\n", c)
			for _, f := range commandFlags(c) {
				if long, ok := strings.CutPrefix(f, "--"); ok {
					fmt.Fprintf(&b, "complete -c baton -n '__fish_seen_subcommand_from %s' -l %s\n", c, long)
				} else {
					fmt.Fprintf(&b, "complete -c baton -n '__fish_seen_subcommand_from %s' -o %s\n", c, strings.TrimPrefix(f, "-"))
				}
			}
		}
	default:
		return "", usagef("want completion bash, zsh or fish, not %q", shell)
	}
	return b.String(), nil
}

// completion is `baton completion bash|zsh|fish`.
func (e *env) completion(args []string) error {
	c := e.flags("completion", false)
	pos, err := c.parse(args, 1, false, "bash|zsh|fish")
	if err != nil {
		return err
	}
	s, err := Completion(pos[0])
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(e.stdout, s)
	return err
}

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/baton-run/baton/internal/cli"
	"github.com/baton-run/baton/internal/scaffold"
)

// initProject is baton init DIR.
func initProject(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	var o scaffold.Options
	fs.StringVar(&o.Module, "module", "", "the project's module path (default: the directory's name)")
	fs.StringVar(&o.Version, "version", "", "the baton version go.mod requires (default: this baton's, as go install or go run pkg@version built it)")
	fs.StringVar(&o.Replace, "replace", "", "a baton checkout go.mod replaces the module with")
	fs.StringVar(&o.Agent, "agent", "", `the agent's name (default "assistant")`)
	pos, help, err := parseLocal(fs, args, out)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: baton init DIR [-module PATH] [-replace BATON_DIR] [-version vX.Y.Z] [-agent NAME]: want one DIR, got %d argument(s)", len(pos))
	}
	if o.Version == "" {
		o.Version = ownVersion()
	}
	if o.Version == "" && o.Replace == "" {
		// Built from a checkout: the project uses that checkout.
		o.Replace = checkout()
		if o.Replace == "" {
			return errors.New("init: this baton has no release version and no baton checkout was found (it was built from one that moved): pass -replace BATON_DIR (a clone of baton) or -version vX.Y.Z")
		}
		fmt.Fprintf(out, "using the baton checkout at %s (go.mod replaces the module with it)\n", o.Replace)
	}
	if o.Replace != "" {
		abs, err := filepath.Abs(o.Replace)
		if err != nil {
			return err
		}
		if !isBaton(abs) {
			return fmt.Errorf("init: -replace %s: no baton checkout there (its go.mod is not module %s)", o.Replace, batonModule)
		}
		o.Replace = abs
	}
	dir := pos[0]
	if err := scaffold.Write(dir, o); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote a baton project in %s\n  cd %s && go mod tidy\n  go test ./...\n  go run ./cmd/dev\n  make deploy\n", dir, dir)
	return nil
}

// batonModule is baton's module path.
const batonModule = "github.com/baton-run/baton"

// checkout finds the baton checkout this binary was built from: the
// directory its source was compiled in (go run ./cmd/baton, go install
// ./cmd/baton without -trimpath), else the working directory or one of
// its parents. "" when neither holds one.
func checkout() string {
	var dirs []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dirs = append(dirs, filepath.Dir(filepath.Dir(filepath.Dir(file)))) // .../cmd/baton/scaffold.go
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			dirs = append(dirs, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, d := range dirs {
		if isBaton(d) {
			return d
		}
	}
	return ""
}

// isBaton reports whether dir holds baton's go.mod.
func isBaton(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(first) == "module "+batonModule
}

// ownVersion is the version of the baton module this binary was built
// from, or "" for a checkout's build ("(devel)").
func ownVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || !strings.HasPrefix(bi.Main.Version, "v") {
		return ""
	}
	return bi.Main.Version
}

// templateCmd is baton template: print, diff (--diff) or rewrite (-w) the
// files a project derives from baton's, in dir.
func templateCmd(args []string, dir string, out io.Writer) error {
	fs := flag.NewFlagSet("template", flag.ContinueOnError)
	diff := fs.Bool("diff", false, "report which derived files differ from this baton's, with the first differing line")
	write := fs.Bool("w", false, "rewrite template.yaml and Makefile with this baton's")
	fs.StringVar(&dir, "C", dir, "the project's directory")
	pos, help, err := parseLocal(fs, args, out)
	if help || err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("template takes no arguments, got %q (the project's directory is -C DIR)", pos)
	}
	derived := scaffold.Derived()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range derived {
			if !yield(n) {
				return
			}
		}
	})
	var differ []string
	for _, n := range names {
		want, p := derived[n], filepath.Join(dir, n)
		switch {
		case *write:
			if err := os.WriteFile(p, want, 0o644); err != nil {
				return fmt.Errorf("template: %w", err)
			}
			fmt.Fprintf(out, "wrote %s\n", p)
		case *diff:
			have, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("template: %w", err)
			}
			if !bytes.Equal(have, want) {
				differ = append(differ, n)
				fmt.Fprintf(out, "%s differs from this baton's: %s\n", n, firstDiff(have, want))
			}
		default:
			fmt.Fprintf(out, "==> %s <==\n%s\n", n, want)
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("template: %s out of date; baton template -w rewrites them", strings.Join(differ, ", "))
	}
	return nil
}

// firstDiff names the first line where have and want differ.
func firstDiff(have, want []byte) string {
	h, w := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(h), len(w)) {
		var a, b string
		if i < len(h) {
			a = h[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: have %q, want %q", i+1, a, b)
		}
	}
	return "same lines"
}

// parseLocal parses a local command's flags, wherever they stand among
// its arguments (cli.ParseFlags), and returns the positional arguments.
// Asked for help, it prints the command's help and its flags to out and
// reports help, so the command does nothing else.
func parseLocal(fs *flag.FlagSet, args []string, out io.Writer) (pos []string, help bool, err error) {
	fs.SetOutput(out)
	fs.Usage = func() {
		h, _ := cli.Help(fs.Name())
		fmt.Fprint(out, h, "\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, err = cli.ParseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, true, nil
	}
	return pos, false, err
}

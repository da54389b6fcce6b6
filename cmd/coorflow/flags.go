package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"

	"github.com/coorflow/coorflow/workflows"
)

// errHelp: -h was given; the usage was printed.
var errHelp = errors.New("help")

// newFlags returns a flag set that reports errors instead of printing.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses flags wherever they are among the arguments, and returns
// the positional arguments.
func (a *app) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmtUsage(a, fs)
				return nil, errHelp
			}
			return nil, usagef("%s: %v; run coorflow help", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func fmtUsage(a *app, fs *flag.FlagSet) {
	fs.SetOutput(a.stdout)
	a.stdout.Write([]byte("Usage of coorflow " + fs.Name() + ":\n"))
	fs.PrintDefaults()
}

// multiFlag is a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}

// dbFlags are the flags of the commands that use the database.
type dbFlags struct {
	db    string
	owner string
}

func (a *app) addDBFlags(fs *flag.FlagSet) *dbFlags {
	d := &dbFlags{}
	def := a.getenv("COORFLOW_DB")
	if def == "" {
		def = defaultDB
	}
	fs.StringVar(&d.db, "db", def, "the database: a SQLite file or a postgres:// URL")
	fs.StringVar(&d.owner, "owner", "default", "whose agents and mission boards")
	return d
}

// readArg returns s, or the content of the file it names when it starts
// with @.
func readArg(s string) (string, error) {
	name, ok := strings.CutPrefix(s, "@")
	if !ok {
		return s, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", usagef("%v", err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// loadFlags are the flags that say what a workflow file may reach: the
// environment variables it may read and the directories its subgraph
// files may be in.
type loadFlags struct {
	allowEnv, includeRoots multiFlag
}

func addLoadFlags(fs *flag.FlagSet) *loadFlags {
	l := &loadFlags{}
	fs.Var(&l.allowEnv, "allow-env", "NAME: an environment variable the workflow file may read in ${NAME} or api_key_env, "+
		"besides *_API_KEY, *_BASE_URL, OLLAMA_HOST and SEARXNG_URL; * matches any characters (repeatable)")
	fs.Var(&l.includeRoots, "include-root", "DIR: a directory whose files the workflow may include, besides its own directory (repeatable)")
	return l
}

// options are the load options the flags give.
func (l *loadFlags) options() []workflows.LoadOption {
	opts := []workflows.LoadOption{workflows.WithAllowedEnv(l.allowEnv...)}
	for _, dir := range l.includeRoots {
		opts = append(opts, workflows.WithIncludeRoot(dir))
	}
	return opts
}

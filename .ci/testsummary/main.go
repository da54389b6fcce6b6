// Command testsummary reads `go test -json` output on stdin and prints what
// a person reads from plain `go test`: one line per package, the output of
// every failed test, the list of skipped tests with their reasons, and a
// closing line "N passed, N failed, N skipped".
//
// It exits 1 when a test or a package failed, and also when a test skipped
// while CI=true: on the CI machine every service the tests need is there,
// so a skip means a test did not run that should have.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type key struct{ pkg, test string }

func main() {
	output := map[key][]string{}
	var passed, failed, skipped int
	var failures, skips []string
	var pkgFailed []string
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		line := in.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
			fmt.Println(string(line)) // build errors and the like come as plain text
			continue
		}
		k := key{ev.Package, ev.Test}
		switch ev.Action {
		case "build-output":
			fmt.Print(ev.Output)
		case "output":
			output[k] = append(output[k], ev.Output)
		case "pass":
			if ev.Test == "" {
				fmt.Printf("ok  \t%s\t%.3fs\n", ev.Package, ev.Elapsed)
			} else {
				passed++
			}
			delete(output, k)
		case "fail":
			if ev.Test == "" {
				fmt.Printf("FAIL\t%s\t%.3fs\n", ev.Package, ev.Elapsed)
				pkgFailed = append(pkgFailed, ev.Package)
				if len(output[k]) > 0 {
					failures = append(failures, fmt.Sprintf("=== package %s\n%s", ev.Package, strings.Join(output[k], "")))
				}
			} else {
				failed++
				failures = append(failures, fmt.Sprintf("=== %s %s\n%s", ev.Package, ev.Test, strings.Join(output[k], "")))
			}
			delete(output, k)
		case "skip":
			if ev.Test == "" {
				fmt.Printf("?   \t%s\t[no test files]\n", ev.Package)
			} else {
				skipped++
				skips = append(skips, fmt.Sprintf("%s %s: %s", ev.Package, ev.Test, skipReason(output[k])))
			}
			delete(output, k)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	for _, f := range failures {
		fmt.Print(f)
	}
	sort.Strings(skips)
	if len(skips) > 0 {
		fmt.Println("skipped tests:")
		for _, s := range skips {
			fmt.Println("  " + s)
		}
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	switch {
	case failed > 0 || len(pkgFailed) > 0:
		os.Exit(1)
	case skipped > 0 && os.Getenv("CI") == "true":
		fmt.Println("testsummary: tests skipped with CI=true; every service they need is on the CI machine, so a skip is a failure")
		os.Exit(1)
	}
}

// skipReason is the last line a skipped test printed before it skipped.
func skipReason(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		s := strings.TrimSpace(out[i])
		if s != "" && !strings.HasPrefix(s, "--- SKIP") {
			return s
		}
	}
	return "(no reason given)"
}

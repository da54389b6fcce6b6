// Package layering holds the test that keeps coorflow's packages in their
// layers: docs/architecture.md's import table is the rule list, and the
// test fails when a package imports something of ours its row does not
// allow, or when a package has no row (Go's own src/go/build/deps_test.go
// is the model). It has no code of its own.
package layering

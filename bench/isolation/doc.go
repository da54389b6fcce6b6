// Package context measures what context isolation saves: the coor team on
// a 12-step plan, each step producing about 2,000 tokens, with every agent
// seeing only its task and its dependencies' results, against CoorAgent's
// shared history, where every agent sees every result so far.
//
//	go test -v -run TestIsolationSavesPromptTokens ./bench/isolation
package isolation

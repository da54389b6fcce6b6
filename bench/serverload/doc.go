// Command serverload is a load benchmark of the HTTP server: it starts a
// real net/http server on 127.0.0.1:0 with a 10-node workflow whose nodes
// each call a scripted model, then sends N concurrent runs through the API
// (one thread each), and reports latency percentiles, throughput and peak
// memory. It then checks that no run was lost or duplicated: every run
// ended done, every thread's final state holds exactly the expected writes,
// and every node ran exactly once per thread.
//
//	go run ./bench/serverload                       # 200 runs, memory saver, wait mode
//	go run ./bench/serverload -saver sqlite -mode stream -runs 200
//
// It is not a test: it exits non-zero when a check fails, and prints the
// figures otherwise. Only loopback traffic; the run count bounds it.
package main

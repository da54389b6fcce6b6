// Command temporal (bench/temporal) measures runs per second on Temporal
// with 1, 2 and 3 coorflow worker processes: measure.sh starts the dev
// server, a PostgreSQL database and the workers as processes of their
// own, and this program submits the runs and prints the figures:
//
//	go run ./bench/temporal -temporal 127.0.0.1:7233 -db postgres://… -file chain.yaml -runs 300 -parallel 32
package main

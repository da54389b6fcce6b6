package main

import (
	"fmt"
	"os"
)

// unsetenv removes a variable from the environment of the process and of
// everything it starts, and wipes its value from the environment block the
// process started with, which /proc/PID/environ shows to every process of
// the same user and which os.Unsetenv leaves in place.
func unsetenv(name string) error {
	if _, ok := os.LookupEnv(name); !ok {
		return nil
	}
	if err := os.Unsetenv(name); err != nil {
		return fmt.Errorf("remove %s from the environment: %w", name, err)
	}
	if err := wipeInitialEnv(name); err != nil {
		return fmt.Errorf("%s is removed from the environment, but /proc/%d/environ may still show it: %w", name, os.Getpid(), err)
	}
	return nil
}

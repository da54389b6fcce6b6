package lgsdktest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SDK is one pinned version of the SDK: the npm project that pins it
// (a folder of this package) and the variable that names a node_modules
// installed from it elsewhere.
type SDK struct {
	Version, Dir, Env string
}

// SDKs are the versions the Platform API is tested against: the 1.x line
// (npm/, the scenarios' own) and the 2.x line (npm2/), which clients
// still run and which sends some parameters differently (stream_mode on a
// joined stream as one JSON array).
var SDKs = []SDK{
	{Version: "1.15.0", Dir: "npm", Env: NodeModulesEnv},
	{Version: "2.0.0", Dir: "npm2", Env: "COORFLOW_LGSDK2_NODE_MODULES"},
}

// NodeModulesOf returns the node_modules directory holding sdk, or skips
// t (fails it under CI=true).
func NodeModulesOf(t testing.TB, sdk SDK) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		unavailable(t, "node is not installed: %v", err)
	}
	nm := os.Getenv(sdk.Env)
	if nm == "" {
		nm = filepath.Join(Dir(), sdk.Dir, "node_modules")
	}
	b, err := os.ReadFile(filepath.Join(nm, SDKPackage, "package.json"))
	if err != nil {
		unavailable(t, "%s %s is not installed in %s: run `npm ci` in %s", SDKPackage, sdk.Version, nm, filepath.Join(Dir(), sdk.Dir))
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.Version != sdk.Version {
		t.Fatalf("lgsdktest: %s in %s is version %q, not the pinned %s", SDKPackage, nm, pkg.Version, sdk.Version)
	}
	return nm
}

// RunScript runs script (a file of this package) with the SDK sdk and
// env, and decodes the JSON line it prints last into report; a failed
// check of the script fails t with its output.
func RunScript(t testing.TB, sdk SDK, script string, env map[string]string, report any) {
	t.Helper()
	modules := NodeModulesOf(t, sdk)
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(Dir(), script), modules)
	cmd.Env = append(os.Environ(), "LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("lgsdktest: %s with SDK %s failed: %v\n%s%s", script, sdk.Version, err, stderr.String(), stdout.String())
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], report); err != nil {
		t.Fatalf("lgsdktest: %s's report: %v\n%s", script, err, stdout.String())
	}
}

package a2a_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/coorflow/coorflow/a2a"
)

// BenchmarkDecodeSendMessage decodes a SendMessage request as the server
// does: the envelope, then its params.
func BenchmarkDecodeSendMessage(b *testing.B) {
	params, _ := json.Marshal(a2a.SendMessageRequest{Message: a2a.UserText("Compare SQLite and PostgreSQL for an embedded agent engine")})
	body, _ := json.Marshal(a2a.Request{JSONRPC: "2.0", ID: json.RawMessage("1"), Method: a2a.MethodSendMessage, Params: params})
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req, e := a2a.DecodeRequest(bytes.NewReader(body), 1<<20)
		if e != nil {
			b.Fatal(e)
		}
		var p a2a.SendMessageRequest
		if e := a2a.DecodeParams(req.Params, &p); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkEncodeTaskResult encodes a completed task as a JSON-RPC result.
func BenchmarkEncodeTaskResult(b *testing.B) {
	task := a2a.Task{ID: "ctx~1", ContextID: "ctx", Status: a2a.TaskStatus{State: a2a.StateCompleted},
		History:   []a2a.Message{*a2a.UserText("question")},
		Artifacts: []a2a.Artifact{{ArtifactID: "answer", Parts: []a2a.Part{a2a.TextPart("an answer of a few words")}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(a2a.Result(json.RawMessage("1"), a2a.SendMessageResponse{Task: &task})); err != nil {
			b.Fatal(err)
		}
	}
}

# A chat-completions server for bench/admission/measure.sh: it answers
# every call "fine" after DELAY seconds. Usage: slowmodel.py PORT DELAY
import json, sys, time, threading
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
DELAY = float(sys.argv[2])
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        n = int(self.headers.get('Content-Length', 0)); body = json.loads(self.rfile.read(n) or b'{}')
        time.sleep(DELAY)
        if body.get('stream'):
            self.send_response(200); self.send_header('Content-Type', 'text/event-stream'); self.end_headers()
            chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "fine"}, "finish_reason": None}]}
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            chunk["choices"][0] = {"index": 0, "delta": {}, "finish_reason": "stop"}
            chunk["usage"] = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n")
            return
        out = {"id": "x", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
        b = json.dumps(out).encode()
        self.send_response(200); self.send_header('Content-Type', 'application/json'); self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)
ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()

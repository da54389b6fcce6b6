// Package a2a is the Agent2Agent protocol (A2A 1.0, as the official
// JavaScript SDK @a2a-js/sdk 1.3 speaks it) for coorflow: its wire types
// in their JSON form (the protobuf JSON mapping of lf.a2a.v1: enum names
// such as "TASK_STATE_COMPLETED", oneofs as the field that is set), the
// JSON-RPC 2.0 binding's envelopes and error codes, and a client.
//
// One definition serves both directions: the server (package server,
// which serves every workflow as an A2A agent) decodes requests and
// encodes answers with these types, and the Client, which workflows use
// to call remote agents, does the opposite.
//
//	c, err := a2a.Dial(ctx, "https://agents.example.com/", a2a.WithBearer(token))
//	if err != nil { ... }
//	res, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: a2a.UserText("Plan a trip")})
//
// Every body read from the network is bounded (MaxBodyBytes, MaxEventBytes).
package a2a

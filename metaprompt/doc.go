// Package metaprompt writes the system prompts of dynamic agents: a model
// expands a short brief — name, role, capabilities, tools, expected
// contribution, locale, task — into a complete prompt, following the
// instructions in metaprompt.md (see Instructions).
//
// A prompt it accepts starts with one sentence stating the agent's task,
// then has the sections "# Steps", "# Output Format", optionally
// "# Examples", and "# Notes", and tells the agent to reason before it
// concludes. Check tests a prompt against these rules; Expand uses it on
// every reply, sends the problems back for one repair round, and fails with
// an *Error (ErrInvalidPrompt) when the repaired reply fails too. Other
// code, such as an editor of agents, can call Check on a prompt a person
// wrote.
//
// An Expander can keep the prompts it writes in the context store, under
// team/metaprompts/<Key>, where Key hashes the brief, the model name and
// the meta-prompt: the same brief expanded by the same model is written
// once. A brief with a Pinned prompt bypasses the model, the check and the
// cache. Inside a graph node an expansion is one journal entry (graph.Do),
// so it is not redone when the node runs again.
package metaprompt

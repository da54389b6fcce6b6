package a2a

import (
	"encoding/json"
	"strings"
)

// ProtocolVersion is the A2A version this package speaks, sent in the
// VersionHeader of every request.
const ProtocolVersion = "1.0"

// VersionHeader is the HTTP header that carries the protocol version.
const VersionHeader = "A2A-Version"

// CardPath is the well-known path of an agent card, relative to its base.
const CardPath = ".well-known/agent-card.json"

// The protocol bindings of an AgentInterface.
const (
	BindingJSONRPC = "JSONRPC"
	BindingREST    = "HTTP+JSON"
)

// TaskState is the state of a task.
type TaskState string

// The states of a task.
const (
	StateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	StateWorking       TaskState = "TASK_STATE_WORKING"
	StateCompleted     TaskState = "TASK_STATE_COMPLETED"
	StateFailed        TaskState = "TASK_STATE_FAILED"
	StateCanceled      TaskState = "TASK_STATE_CANCELED"
	StateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      TaskState = "TASK_STATE_REJECTED"
	StateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
)

// Terminal says the task can change no more.
func (s TaskState) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// Interrupted says the task waits for the client (input or auth).
func (s TaskState) Interrupted() bool {
	return s == StateInputRequired || s == StateAuthRequired
}

// Final says a stream of the task ends with this state: terminal or
// interrupted.
func (s TaskState) Final() bool { return s.Terminal() || s.Interrupted() }

// Role is the sender of a message.
type Role string

// The roles of a message's sender.
const (
	RoleUser  Role = "ROLE_USER"
	RoleAgent Role = "ROLE_AGENT"
)

// Part is one piece of a message or artifact: exactly one of Text, Raw,
// URL or Data is set.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// TextPart is a part of text.
func TextPart(s string) Part { return Part{Text: &s} }

// DataPart is a part of JSON data.
func DataPart(v any) Part {
	raw, err := json.Marshal(v)
	if err != nil {
		raw = []byte("null")
	}
	return Part{Data: raw}
}

// Message is one turn of a conversation.
type Message struct {
	MessageID        string         `json:"messageId,omitempty"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             Role           `json:"role,omitempty"`
	Parts            []Part         `json:"parts,omitempty"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// UserText is a user's message of one text part.
func UserText(s string) *Message {
	return &Message{MessageID: NewID(), Role: RoleUser, Parts: []Part{TextPart(s)}}
}

// Text joins the message's text parts, and renders its data parts as
// JSON.
func (m *Message) Text() string {
	if m == nil {
		return ""
	}
	return PartsText(m.Parts)
}

// PartsText joins the text of parts (data parts as JSON, files by their
// URL or name), one per line.
func PartsText(parts []Part) string {
	var b strings.Builder
	for _, p := range parts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch {
		case p.Text != nil:
			b.WriteString(*p.Text)
		case len(p.Data) > 0:
			b.Write(p.Data)
		case p.URL != "":
			b.WriteString(p.URL)
		case p.Filename != "":
			b.WriteString("[file " + p.Filename + "]")
		}
	}
	return b.String()
}

// TaskStatus is a task's state, with the message that goes with it.
type TaskStatus struct {
	State     TaskState `json:"state,omitempty"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string         `json:"artifactId,omitempty"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []Part         `json:"parts,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
}

// Task is the unit of work of an agent.
type Task struct {
	ID        string         `json:"id,omitempty"`
	ContextID string         `json:"contextId,omitempty"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatusUpdateEvent tells a change of a task's status.
type TaskStatusUpdateEvent struct {
	TaskID    string         `json:"taskId,omitempty"`
	ContextID string         `json:"contextId,omitempty"`
	Status    TaskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent carries an artifact, or a chunk of one.
type TaskArtifactUpdateEvent struct {
	TaskID    string         `json:"taskId,omitempty"`
	ContextID string         `json:"contextId,omitempty"`
	Artifact  *Artifact      `json:"artifact,omitempty"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// StreamResponse is one event of a stream: exactly one field is set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// SendMessageResponse is the answer of SendMessage: a task or a message.
type SendMessageResponse struct {
	Task    *Task    `json:"task,omitempty"`
	Message *Message `json:"message,omitempty"`
}

// AuthenticationInfo is how an agent authenticates to a push
// notification's URL.
type AuthenticationInfo struct {
	Scheme      string `json:"scheme,omitempty"`
	Credentials string `json:"credentials,omitempty"`
}

// TaskPushNotificationConfig asks the agent to post a task's updates to
// URL.
type TaskPushNotificationConfig struct {
	Tenant         string              `json:"tenant,omitempty"`
	ID             string              `json:"id,omitempty"`
	TaskID         string              `json:"taskId,omitempty"`
	URL            string              `json:"url,omitempty"`
	Token          string              `json:"token,omitempty"`
	Authentication *AuthenticationInfo `json:"authentication,omitempty"`
}

// SendMessageConfiguration configures a SendMessage request.
type SendMessageConfiguration struct {
	AcceptedOutputModes        []string                    `json:"acceptedOutputModes,omitempty"`
	TaskPushNotificationConfig *TaskPushNotificationConfig `json:"taskPushNotificationConfig,omitempty"`
	HistoryLength              *int                        `json:"historyLength,omitempty"`
	ReturnImmediately          bool                        `json:"returnImmediately,omitempty"`
}

// SendMessageRequest is the params of SendMessage and
// SendStreamingMessage.
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message,omitempty"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any            `json:"metadata,omitempty"`
}

// TaskRequest is the params of GetTask, CancelTask and SubscribeToTask.
type TaskRequest struct {
	Tenant        string         `json:"tenant,omitempty"`
	ID            string         `json:"id,omitempty"`
	HistoryLength *int           `json:"historyLength,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// ListTasksRequest is the params of ListTasks.
type ListTasksRequest struct {
	Tenant               string    `json:"tenant,omitempty"`
	ContextID            string    `json:"contextId,omitempty"`
	Status               TaskState `json:"status,omitempty"`
	PageSize             *int      `json:"pageSize,omitempty"`
	PageToken            string    `json:"pageToken,omitempty"`
	HistoryLength        *int      `json:"historyLength,omitempty"`
	StatusTimestampAfter string    `json:"statusTimestampAfter,omitempty"`
	IncludeArtifacts     bool      `json:"includeArtifacts,omitempty"`
}

// ListTasksResponse is a page of tasks.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// PushConfigRequest is the params of GetTaskPushNotificationConfig and
// DeleteTaskPushNotificationConfig.
type PushConfigRequest struct {
	Tenant string `json:"tenant,omitempty"`
	TaskID string `json:"taskId,omitempty"`
	ID     string `json:"id,omitempty"`
}

// ListPushConfigsRequest is the params of ListTaskPushNotificationConfigs.
type ListPushConfigsRequest struct {
	Tenant    string `json:"tenant,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
	PageSize  int    `json:"pageSize,omitempty"`
	PageToken string `json:"pageToken,omitempty"`
}

// ListPushConfigsResponse is a page of push notification configs.
type ListPushConfigsResponse struct {
	Configs       []TaskPushNotificationConfig `json:"configs"`
	NextPageToken string                       `json:"nextPageToken,omitempty"`
}

// AgentInterface is a URL where the agent is served, with its binding and
// protocol version.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentProvider is who serves the agent.
type AgentProvider struct {
	URL          string `json:"url,omitempty"`
	Organization string `json:"organization,omitempty"`
}

// AgentCapabilities are the optional features of the agent.
type AgentCapabilities struct {
	Streaming         *bool `json:"streaming,omitempty"`
	PushNotifications *bool `json:"pushNotifications,omitempty"`
	ExtendedAgentCard *bool `json:"extendedAgentCard,omitempty"`
}

// AgentSkill is something the agent does well.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// SecurityScheme is one way to authenticate (only HTTP auth is used
// here).
type SecurityScheme struct {
	HTTPAuth *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`
}

// HTTPAuthSecurityScheme is HTTP authentication (RFC 9110), such as
// Bearer.
type HTTPAuthSecurityScheme struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

// SecurityRequirement names the schemes a request must satisfy.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is a list of strings (the scopes of a requirement).
type StringList struct {
	List []string `json:"list"`
}

// AgentCard describes an agent: who it is, where and how to call it.
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []AgentInterface          `json:"supportedInterfaces"`
	Provider             *AgentProvider            `json:"provider,omitempty"`
	Version              string                    `json:"version"`
	DocumentationURL     string                    `json:"documentationUrl,omitempty"`
	Capabilities         AgentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []AgentSkill              `json:"skills"`
}

// Interface is the card's first interface of binding, or false.
func (c *AgentCard) Interface(binding string) (AgentInterface, bool) {
	for _, in := range c.SupportedInterfaces {
		if in.ProtocolBinding == binding {
			return in, true
		}
	}
	return AgentInterface{}, false
}

package nodes

import "errors"

// ErrNoModel: a prebuilt node was configured without its model (a worker
// without its agent).
var ErrNoModel = errors.New("nodes: no model")

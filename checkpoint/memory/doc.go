// Package memory is a graph.Saver that keeps checkpoints, channel blobs and
// task records in the process's memory. It suits tests, examples and short
// runs that need no durability: everything is lost when the process exits.
//
// The Saver copies every byte slice it is given and every byte slice it
// returns, so callers can neither change stored data after the fact nor see
// a later change through a slice they hold. Like the other backends it keeps
// checkpoint timestamps to the microsecond, in UTC.
//
// A Saver is safe for concurrent use; reads proceed in parallel and writes
// are serialized by one lock, under which PutCheckpoint checks that the
// namespace's newest checkpoint is the one its writer expects.
package memory

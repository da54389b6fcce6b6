package telemetry

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The protobuf encoding of OTLP's ExportTraceServiceRequest
// (opentelemetry/proto/collector/trace/v1/trace_service.proto and the
// trace, resource and common messages it holds), written field by field.
// Field numbers are those of the .proto files; proto3 leaves out fields
// at their zero value. The tests decode the output with the generated
// go.opentelemetry.io/proto/otlp types.

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

func appendVarint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendTag(b, field, wireVarint), v)
}

func appendFixed64(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), v)
}

func appendFixed32(b []byte, field int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(appendTag(b, field, wireFixed32), v)
}

func appendString(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, field int, p []byte) []byte {
	if len(p) == 0 {
		return b
	}
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(p)))
	return append(b, p...)
}

// appendMessage appends field as an embedded message written by fill,
// even when fill writes nothing (an empty message is still a value).
func appendMessage(b []byte, field int, fill func([]byte) []byte) []byte {
	b = appendTag(b, field, wireBytes)
	// Reserve one length byte, the common case, and move the body when
	// its length needs more.
	at := len(b)
	b = append(b, 0)
	b = fill(b)
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	var lenBuf [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(lenBuf[:], uint64(n))
	b = append(b, lenBuf[:l-1]...) // grow by the extra length bytes
	copy(b[at+l:], b[at+1:at+1+n])
	copy(b[at:], lenBuf[:l])
	return b
}

// encodeTraces returns the ExportTraceServiceRequest holding spans,
// grouped by resource and instrumentation scope in the order they come.
func encodeTraces(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resourceGroup struct {
		res    *resource.Resource
		scopes []*scopeGroup
	}
	var groups []*resourceGroup
	for _, s := range spans {
		var rg *resourceGroup
		for _, g := range groups {
			if g.res.Equal(s.Resource()) {
				rg = g
				break
			}
		}
		if rg == nil {
			rg = &resourceGroup{res: s.Resource()}
			groups = append(groups, rg)
		}
		var sg *scopeGroup
		scope := s.InstrumentationScope()
		for _, g := range rg.scopes {
			if g.scope.Name == scope.Name && g.scope.Version == scope.Version &&
				g.scope.SchemaURL == scope.SchemaURL && g.scope.Attributes.Equals(&scope.Attributes) {
				sg = g
				break
			}
		}
		if sg == nil {
			sg = &scopeGroup{scope: scope}
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}

	b := make([]byte, 0, 256*len(spans))
	for _, rg := range groups {
		b = appendMessage(b, 1, func(b []byte) []byte { // resource_spans
			b = appendMessage(b, 1, func(b []byte) []byte { // resource
				return appendAttributes(b, 1, rg.res.Attributes())
			})
			for _, sg := range rg.scopes {
				b = appendMessage(b, 2, func(b []byte) []byte { // scope_spans
					b = appendMessage(b, 1, func(b []byte) []byte { // scope
						b = appendString(b, 1, sg.scope.Name)
						b = appendString(b, 2, sg.scope.Version)
						return appendAttributes(b, 3, sg.scope.Attributes.ToSlice())
					})
					for _, s := range sg.spans {
						b = appendMessage(b, 2, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendString(b, 3, sg.scope.SchemaURL)
				})
			}
			return appendString(b, 3, rg.res.SchemaURL())
		})
	}
	return b
}

// Flags of Span.flags and Link.flags above the W3C trace flags.
const (
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

// spanFlags returns the W3C trace flags tf and whether remote (a span's
// parent, a link's span) is remote.
func spanFlags(tf trace.TraceFlags, remote trace.SpanContext) uint32 {
	f := uint32(tf) | spanFlagsHasIsRemote
	if remote.IsRemote() {
		f |= spanFlagsIsRemote
	}
	return f
}

func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		b = appendBytes(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	b = appendVarint(b, 6, uint64(s.SpanKind())) // OTLP's numbering is trace.SpanKind's
	b = appendFixed64(b, 7, uint64(max(0, s.StartTime().UnixNano())))
	b = appendFixed64(b, 8, uint64(max(0, s.EndTime().UnixNano())))
	b = appendAttributes(b, 9, s.Attributes())
	b = appendVarint(b, 10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		b = appendMessage(b, 11, func(b []byte) []byte {
			b = appendFixed64(b, 1, uint64(max(0, ev.Time.UnixNano())))
			b = appendString(b, 2, ev.Name)
			b = appendAttributes(b, 3, ev.Attributes)
			return appendVarint(b, 4, uint64(ev.DroppedAttributeCount))
		})
	}
	b = appendVarint(b, 12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = appendMessage(b, 13, func(b []byte) []byte {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, 1, ltid[:])
			b = appendBytes(b, 2, lsid[:])
			b = appendString(b, 3, l.SpanContext.TraceState().String())
			b = appendAttributes(b, 4, l.Attributes)
			b = appendVarint(b, 5, uint64(l.DroppedAttributeCount))
			return appendFixed32(b, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		})
	}
	b = appendVarint(b, 14, uint64(s.DroppedLinks()))
	st := s.Status()
	b = appendMessage(b, 15, func(b []byte) []byte {
		b = appendString(b, 2, st.Description)
		return appendVarint(b, 3, uint64(statusCode(st.Code)))
	})
	return appendFixed32(b, 16, spanFlags(sc.TraceFlags(), s.Parent()))
}

// statusCode maps codes.Code to OTLP's Status.StatusCode, which numbers
// OK and ERROR the other way round.
func statusCode(c codes.Code) int {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

// appendAttributes appends each attribute as a KeyValue in field.
func appendAttributes(b []byte, field int, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		b = appendKeyValue(b, field, string(kv.Key), kv.Value)
	}
	return b
}

func appendKeyValue(b []byte, field int, key string, v attribute.Value) []byte {
	return appendMessage(b, field, func(b []byte) []byte {
		b = appendString(b, 1, key)
		return appendMessage(b, 2, func(b []byte) []byte { return appendAnyValue(b, v) })
	})
}

// appendAnyValue writes the fields of an AnyValue. Its value is a oneof,
// so a zero is written too (a present false is not an absent value).
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.STRING:
		s := v.AsString()
		b = binary.AppendUvarint(appendTag(b, 1, wireBytes), uint64(len(s)))
		return append(b, s...)
	case attribute.BOOL:
		var x uint64
		if v.AsBool() {
			x = 1
		}
		return binary.AppendUvarint(appendTag(b, 2, wireVarint), x)
	case attribute.INT64:
		return binary.AppendUvarint(appendTag(b, 3, wireVarint), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return binary.LittleEndian.AppendUint64(appendTag(b, 4, wireFixed64), math.Float64bits(v.AsFloat64()))
	case attribute.BYTESLICE:
		p := v.AsByteSlice()
		b = binary.AppendUvarint(appendTag(b, 7, wireBytes), uint64(len(p)))
		return append(b, p...)
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		return appendMessage(b, 6, func(b []byte) []byte { // kvlist_value
			for _, kv := range v.AsMap() {
				b = appendKeyValue(b, 1, string(kv.Key), kv.Value)
			}
			return b
		})
	}
	return b // EMPTY: an AnyValue with no value
}

// appendArray writes an ArrayValue (AnyValue field 5) of xs.
func appendArray[T any](b []byte, xs []T, value func(T) attribute.Value) []byte {
	return appendMessage(b, 5, func(b []byte) []byte {
		for _, x := range xs {
			b = appendMessage(b, 1, func(b []byte) []byte { return appendAnyValue(b, value(x)) })
		}
		return b
	})
}

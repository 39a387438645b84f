package otel

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP protobuf encoding of an ExportTraceServiceRequest
// (opentelemetry/proto/collector/trace/v1), written by hand: the field
// numbers below are the .proto's. The generated types and their protobuf
// runtime (and, through the SDK's own exporter, grpc) would add some 30 MB
// to the resume bootstrap; this is the part of the schema baton's spans
// use. The tests decode what it writes with the generated types.

// pb appends protobuf fields to a byte slice.
type pb []byte

func (b pb) varint(v uint64) pb { return binary.AppendUvarint(b, v) }

func (b pb) tag(field, wire int) pb { return b.varint(uint64(field)<<3 | uint64(wire)) }

// bytes appends a length-delimited field (a string, bytes, or a message).
func (b pb) bytes(field int, v []byte) pb {
	return append(b.tag(field, 2).varint(uint64(len(v))), v...)
}

func (b pb) str(field int, s string) pb {
	if s == "" {
		return b
	}
	return b.bytes(field, []byte(s))
}

func (b pb) uint(field int, v uint64) pb {
	if v == 0 {
		return b
	}
	return b.tag(field, 0).varint(v)
}

func (b pb) fixed64(field int, v uint64) pb {
	return binary.LittleEndian.AppendUint64(b.tag(field, 1), v)
}

// request encodes spans as one ExportTraceServiceRequest: a ResourceSpans
// per resource, a ScopeSpans per instrumentation scope, in the order the
// spans came.
func request(spans []sdktrace.ReadOnlySpan) []byte {
	type scoped struct {
		scope instrumentation.Scope
		spans pb
	}
	type group struct {
		res    *resource.Resource
		scopes []*scoped
	}
	var groups []*group
	for _, s := range spans {
		var g *group
		for _, have := range groups {
			if have.res == s.Resource() {
				g = have
			}
		}
		if g == nil {
			g = &group{res: s.Resource()}
			groups = append(groups, g)
		}
		var sc *scoped
		for _, have := range g.scopes {
			if have.scope == s.InstrumentationScope() {
				sc = have
			}
		}
		if sc == nil {
			sc = &scoped{scope: s.InstrumentationScope()}
			g.scopes = append(g.scopes, sc)
		}
		sc.spans = sc.spans.bytes(2, span(s))
	}
	var req pb
	for _, g := range groups {
		var rs pb
		var res pb
		if g.res != nil {
			for _, kv := range g.res.Attributes() {
				res = res.bytes(1, keyValue(kv))
			}
		}
		rs = rs.bytes(1, res)
		for _, sc := range g.scopes {
			scope := pb(nil).str(1, sc.scope.Name).str(2, sc.scope.Version)
			ss := pb(nil).bytes(1, scope)
			ss = append(ss, sc.spans...)
			rs = rs.bytes(2, ss.str(3, sc.scope.SchemaURL))
		}
		if g.res != nil {
			rs = rs.str(3, g.res.SchemaURL())
		}
		req = req.bytes(1, rs)
	}
	return req
}

// span encodes one Span message.
func span(s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b := pb(nil).bytes(1, tid[:]).bytes(2, sid[:]).str(3, sc.TraceState().String())
	if p := s.Parent(); p.IsValid() {
		pid := p.SpanID()
		b = b.bytes(4, pid[:])
	}
	b = b.str(5, s.Name()).uint(6, uint64(s.SpanKind()))
	b = b.fixed64(7, uint64(s.StartTime().UnixNano())).fixed64(8, uint64(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		b = b.bytes(9, keyValue(kv))
	}
	b = b.uint(10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		e := pb(nil).fixed64(1, uint64(ev.Time.UnixNano())).str(2, ev.Name)
		for _, kv := range ev.Attributes {
			e = e.bytes(3, keyValue(kv))
		}
		b = b.bytes(11, e)
	}
	b = b.uint(12, uint64(s.DroppedEvents()))
	if st := s.Status(); st.Code != codes.Unset {
		// OTLP's codes: 1 ok, 2 error (the API's are 2 and 1).
		code := uint64(1)
		if st.Code == codes.Error {
			code = 2
		}
		b = b.bytes(15, pb(nil).str(2, st.Description).uint(3, code))
	}
	return b
}

func keyValue(kv attribute.KeyValue) []byte {
	return pb(nil).str(1, string(kv.Key)).bytes(2, anyValue(kv.Value))
}

// anyValue encodes an AnyValue: a scalar, or an ArrayValue of scalars.
func anyValue(v attribute.Value) []byte {
	var b pb
	switch v.Type() {
	case attribute.STRING:
		b = b.bytes(1, []byte(v.AsString()))
	case attribute.BOOL:
		b = b.tag(2, 0).varint(boolInt(v.AsBool()))
	case attribute.INT64:
		b = b.tag(3, 0).varint(uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = b.fixed64(4, math.Float64bits(v.AsFloat64()))
	case attribute.STRINGSLICE:
		b = b.bytes(5, array(v.AsStringSlice(), attribute.StringValue))
	case attribute.BOOLSLICE:
		b = b.bytes(5, array(v.AsBoolSlice(), attribute.BoolValue))
	case attribute.INT64SLICE:
		b = b.bytes(5, array(v.AsInt64Slice(), attribute.Int64Value))
	case attribute.FLOAT64SLICE:
		b = b.bytes(5, array(v.AsFloat64Slice(), attribute.Float64Value))
	}
	return b
}

func array[T any](vs []T, value func(T) attribute.Value) []byte {
	var b pb
	for _, v := range vs {
		b = b.bytes(1, anyValue(value(v)))
	}
	return b
}

func boolInt(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

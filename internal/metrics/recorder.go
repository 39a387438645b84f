package metrics

import (
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Recorder writes metrics as EMF lines to one writer, one whole line per
// Write. It is safe for concurrent use. A nil *Recorder records nothing.
type Recorder struct {
	w        io.Writer
	function string
	// Now is the clock of the lines' timestamps and of WakeToResume; nil
	// means time.Now.
	Now func() time.Time

	mu  sync.Mutex
	buf []byte
}

// New returns a Recorder writing to w, its lines naming function (the
// Function dimension); nil when w is nil, so that nothing is recorded.
func New(w io.Writer, function string) *Recorder {
	if w == nil {
		return nil
	}
	return &Recorder{w: w, function: dimValue(function, "local")}
}

// Lambda is New for a deployed function: Function is the function's name
// as Lambda sets it (AWS_LAMBDA_FUNCTION_NAME), or "local" outside Lambda.
func Lambda(w io.Writer) *Recorder {
	return New(w, os.Getenv("AWS_LAMBDA_FUNCTION_NAME"))
}

// Function is the Function dimension of the recorder's lines.
func (r *Recorder) Function() string {
	if r == nil {
		return ""
	}
	return r.function
}

func (r *Recorder) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Value is one metric's value.
type Value struct {
	Name Name
	V    float64
}

// ms is a duration's value in milliseconds.
func ms(d time.Duration) float64 { return float64(max(d, 0)) / float64(time.Millisecond) }

// emit writes one line: vals, which share one Key (if any) whose value is
// kind, for agent (none when empty). Up to 100 values fit in a line; the
// callers write far fewer.
func (r *Recorder) emit(agent, kind string, vals ...Value) {
	if r == nil || len(vals) == 0 {
		return
	}
	key := vals[0].Name.Key()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buf[:0]
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, r.now().UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":"`+Namespace+`","Dimensions":[["`+DimFunction+`"]`...)
	if agent != "" {
		b = append(b, `,["`+DimFunction+`","`+DimAgent+`"]`...)
	}
	if key != "" {
		b = append(b, `,["`+DimFunction+`","`...)
		b = append(b, key...)
		b = append(b, `"]`...)
	}
	b = append(b, `],"Metrics":[`...)
	for i, v := range vals[:min(len(vals), maxPerLine)] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":"`...)
		b = append(b, v.Name...)
		b = append(b, `","Unit":"`...)
		b = append(b, v.Name.Unit()...)
		b = append(b, `"}`...)
	}
	b = append(b, `]}]},"`+DimFunction+`":"`...)
	b = append(b, r.function...)
	if agent != "" {
		b = append(b, `","`+DimAgent+`":"`...)
		b = appendDim(b, agent)
	}
	if key != "" {
		b = append(b, `","`...)
		b = append(b, key...)
		b = append(b, `":"`...)
		b = appendDim(b, dimValue(kind, "none"))
	}
	b = append(b, '"')
	for _, v := range vals[:min(len(vals), maxPerLine)] {
		b = append(b, `,"`...)
		b = append(b, v.Name...)
		b = append(b, `":`...)
		b = appendNumber(b, v.V)
	}
	b = append(b, "}\n"...)
	r.buf = b
	// A lost line is a lost sample; the function's work goes on.
	_, _ = r.w.Write(b)
}

// maxPerLine is the most metrics one EMF directive may name.
const maxPerLine = 100

// maxDim bounds a dimension value (CloudWatch allows 1,024 characters).
const maxDim = 255

// dimValue is v as a dimension value (see appendDim); blank is def.
func dimValue(v, def string) string {
	if v = strings.TrimSpace(v); v == "" {
		return def
	}
	return string(appendDim(nil, v))
}

// appendDim appends v to b as a dimension value: printable ASCII other
// than a blank, a quote or a backslash (each other byte is '_'), at most
// maxDim long.
func appendDim(b []byte, v string) []byte {
	for i := 0; i < len(v) && i < maxDim; i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			c = '_'
		}
		b = append(b, c)
	}
	return b
}

// appendNumber appends v as a JSON number, to a thousandth; a value that
// is not finite is 0.
func appendNumber(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.AppendFloat(b, math.Round(v*1000)/1000, 'f', -1, 64)
}

package client

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"time"
)

// maxSSELine bounds one line of an event stream; the gateway's lines are a
// few kilobytes at most.
const maxSSELine = 1 << 20

// frame is one dispatched message of a text/event-stream, as the HTML
// standard's event stream interpretation defines it.
type frame struct {
	id    string // the last event id after this message (sticky, per the standard)
	hasID bool   // this message itself carried an id field
	event string // "message" when the stream named none
	data  string
}

// sseReader reads frames from an event stream. It keeps the last event id
// and the latest retry hint across frames.
type sseReader struct {
	sc     *bufio.Scanner
	lastID string
	retry  time.Duration // 0 until the stream sends a valid retry field
	first  bool
}

func newSSEReader(r io.Reader, lastID string) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxSSELine)
	sc.Split(scanSSELines)
	return &sseReader{sc: sc, lastID: lastID, first: true}
}

// next returns the next message that has data. Messages without data
// (comments, keep-alives, a lone retry) are consumed silently. At the end
// of the stream it returns the scanner's error, or io.EOF; a message cut
// off by the end of the stream is dropped, as the standard says.
func (r *sseReader) next() (frame, error) {
	var data strings.Builder
	var event string
	hasData, hasID := false, false
	for r.sc.Scan() {
		line := r.sc.Text()
		if r.first {
			line = strings.TrimPrefix(line, "\ufeff")
			r.first = false
		}
		if line == "" {
			if !hasData {
				event, hasID = "", false
				continue
			}
			if event == "" {
				event = "message"
			}
			return frame{id: r.lastID, hasID: hasID, event: event, data: data.String()}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			event = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				r.lastID, hasID = value, true
			}
		case "retry":
			if ms, err := strconv.ParseUint(value, 10, 31); err == nil && isDigits(value) {
				r.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return frame{}, err
	}
	return frame{}, io.EOF
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// scanSSELines splits on CRLF, LF or CR, as event streams may use any.
func scanSSELines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		// A CR: swallow a following LF, which may not have arrived yet.
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if !atEOF {
			return 0, nil, nil
		}
		return i + 1, data[:i], nil
	}
	if atEOF {
		// An unterminated last line: the message it belongs to is cut off.
		return len(data), nil, bufio.ErrFinalToken
	}
	return 0, nil, nil
}

package client

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// readAll parses a whole stream.
func readAll(t testing.TB, r io.Reader) ([]frame, time.Duration) {
	sr := newSSEReader(r, "")
	var out []frame
	for {
		f, err := sr.next()
		if errors.Is(err, io.EOF) {
			return out, sr.retry
		}
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		out = append(out, f)
	}
}

func TestSSEParserFollowsTheStandard(t *testing.T) {
	stream := "\ufeffretry: 1500\n: connected\n\n" +
		"id: 1\nevent: reset\ndata: {\"a\":1}\n\n" +
		"data:no space\r\ndata:  two spaces\r\n\r\n" + // CRLF, multi-line data
		"id: 2\revent: leader.begin\rdata: x\r\r" + // CR alone
		"event: ignored-no-data\n\n" +
		"retry: soon\nid\ndata: y\n\n" + // bad retry ignored; empty id resets
		"id: 9\ndata: cut off"
	frames, retry := readAll(t, iotest.OneByteReader(strings.NewReader(stream)))
	want := []frame{
		{id: "1", hasID: true, event: "reset", data: `{"a":1}`},
		{id: "1", event: "message", data: "no space\n two spaces"},
		{id: "2", hasID: true, event: "leader.begin", data: "x"},
		{id: "", hasID: true, event: "message", data: "y"},
	}
	if len(frames) != len(want) {
		t.Fatalf("got %d frames %+v, want %+v", len(frames), frames, want)
	}
	for i := range want {
		if frames[i] != want[i] {
			t.Errorf("frame %d: %+v, want %+v", i, frames[i], want[i])
		}
	}
	if retry != 1500*time.Millisecond {
		t.Errorf("retry %s, want 1.5s", retry)
	}
}

// FuzzSSEParser feeds arbitrary streams to the parser: it must end, never
// panic, never report an id holding NUL, and parse what a well-formed
// writer wrote from the same input back to the same frames.
func FuzzSSEParser(f *testing.F) {
	f.Add("id: 1\nevent: reset\ndata: {}\n\n", "leader.begin", "7")
	f.Add("retry: 10\r\n:c\r\n\r\ndata\n\n", "x", "")
	f.Add("\ufeffdata: a\rdata: b\r\r", "", "id\x00")
	f.Fuzz(func(t *testing.T, stream, data, id string) {
		frames, _ := readAll(t, strings.NewReader(stream))
		for _, fr := range frames {
			if strings.ContainsRune(fr.id, 0) {
				t.Fatalf("id with NUL: %q", fr.id)
			}
		}
		// Round trip: one event with one-line fields.
		if strings.ContainsAny(data+id, "\r\n\x00") || strings.HasPrefix(id, " ") || strings.HasPrefix(data, " ") {
			return
		}
		var b strings.Builder
		b.WriteString("retry: 5\n: comment\n\n")
		b.WriteString("id: " + id + "\nevent: e\ndata: " + data + "\n\n")
		got, retry := readAll(t, strings.NewReader(b.String()))
		if len(got) != 1 || got[0].id != id || got[0].data != data || got[0].event != "e" || retry != 5*time.Millisecond {
			t.Fatalf("round trip of id %q data %q: %+v retry %s", id, data, got, retry)
		}
	})
}

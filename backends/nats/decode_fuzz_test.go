package nats

import (
	"bytes"
	"os"
	"testing"
)

// FuzzDecode: whatever a record message holds (written by an elector of
// another version, or damaged), decode answers an error or a record that
// passes the Record's checks, never a panic; and a record it reads, written
// again as this version writes it, is written the same the next time (what
// encode normalises, such as metadata's spaces, it normalises once).
func FuzzDecode(f *testing.F) {
	for _, file := range []string{"testdata/record-v1.json", "testdata/record-v2.json", "testdata/record-v2-holders.json", "testdata/record-v2-single-leader.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"v":2,"record":{"name":"e","deleted":true}}`))
	f.Add([]byte(`{"v":1,"record":{"name":"e","leading":true,"line":[{"id":"a"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decode("e", 7, data)
		if err != nil {
			return
		}
		if err := s.rec.Check(); err != nil {
			t.Fatalf("decode answered a record that fails its checks: %v", err)
		}
		s.rec.Snapshot()
		s.rec.NextDeadline()
		once, err := encode(s.rec, s.events, s.prev, s.deleted)
		if err != nil {
			t.Fatalf("encode of a decoded record: %v", err)
		}
		s2, err := decode("e", 7, once)
		if err != nil {
			t.Fatalf("decode of %s, encoded from a decoded record: %v", once, err)
		}
		twice, err := encode(s2.rec, s2.events, s2.prev, s2.deleted)
		if err != nil {
			t.Fatalf("encode of %s decoded: %v", once, err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("a decoded record written again reads back otherwise:\n%s\n%s", once, twice)
		}
	})
}

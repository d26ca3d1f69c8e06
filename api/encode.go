package api

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The answers of the hot paths (heartbeat, campaign, error report, leader
// read) are written by hand rather than by encoding/json's reflection: the
// same bytes at a fraction of the cost. TestHandEncodingIsEncodingJSON
// holds them to json.Marshal's output.

// jsonAppender is an answer that writes itself as JSON. appendJSON reports
// false when it cannot (text that needs rare escapes, members it leaves to
// encoding/json); writeJSON then uses encoding/json.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, bool)
}

// object appends the members of one JSON object. Once a member could not
// be written, ok is false and the rest is skipped.
type object struct {
	b  []byte
	n  int
	ok bool
}

func newObject(b []byte) *object { return &object{b: append(b, '{'), ok: true} }

func (o *object) key(name string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(append(append(o.b, '"'), name...), '"', ':')
}

// str appends a string member, escaped as encoding/json escapes it (HTML
// characters included). Text outside ASCII is left to encoding/json, which
// also replaces invalid UTF-8 and escapes U+2028 and U+2029.
func (o *object) str(name, s string) {
	if !o.ok {
		return
	}
	o.key(name)
	b := append(o.b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			o.ok = false
			return
		}
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	o.b = append(append(b, s[start:]...), '"')
}

// omitEmpty appends a string member unless it is "" (omitempty).
func (o *object) omitEmpty(name, s string) {
	if s != "" {
		o.str(name, s)
	}
}

func (o *object) int(name string, v int64) {
	if o.ok {
		o.key(name)
		o.b = strconv.AppendInt(o.b, v, 10)
	}
}

func (o *object) uint(name string, v uint64) {
	if o.ok {
		o.key(name)
		o.b = strconv.AppendUint(o.b, v, 10)
	}
}

// raw appends JSON that is compact and needs no HTML escape, as stored
// metadata usually is; other JSON is left to encoding/json, which compacts
// and escapes a json.RawMessage.
func (o *object) raw(name string, m json.RawMessage) {
	if !o.ok {
		return
	}
	for _, c := range m {
		switch {
		case c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf, c == ' ' || c == '\t' || c == '\n' || c == '\r':
			o.ok = false // rare: encoding/json escapes or compacts it
			return
		}
	}
	o.key(name)
	o.b = append(o.b, m...)
}

func (o *object) null(name string) {
	if o.ok {
		o.key(name)
		o.b = append(o.b, "null"...)
	}
}

func (o *object) end() ([]byte, bool) { return append(o.b, '}'), o.ok }

// leader appends l's members in a leaderView's order.
func (o *object) leader(l *leaderView) {
	o.str("id", l.ID)
	o.uint("term", l.Term)
	o.raw("metadata", l.Metadata)
	o.str("since", l.Since)
	o.str("expires_at", l.ExpiresAt)
}

// holders appends the holders member (omitzero: absent when nil).
func (o *object) holders(hs []leaderView) {
	if hs == nil || !o.ok {
		return
	}
	o.key("holders")
	o.b = append(o.b, '[')
	for i := range hs {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		l := newObject(o.b)
		l.leader(&hs[i])
		if o.b, o.ok = l.end(); !o.ok {
			return
		}
	}
	o.b = append(o.b, ']')
}

// appendJSON writes a status document; one with a transfer or a webhook
// secret is left to encoding/json.
func (d statusDoc) appendJSON(b []byte) ([]byte, bool) {
	if d.Transfer != nil || d.WebhookSecret != "" {
		return b, false
	}
	o := newObject(b)
	o.str("election", d.Election)
	o.str("id", d.ID)
	o.str("state", string(d.State))
	o.int("position", int64(d.Position))
	o.uint("term", d.Term)
	o.raw("metadata", d.Metadata)
	o.str("ttl", d.TTL)
	o.int("priority", int64(d.Priority))
	o.str("joined_at", d.JoinedAt)
	o.str("expires_at", d.ExpiresAt)
	o.omitEmpty("cooldown_until", d.CooldownUntil)
	if d.Leader == nil {
		o.null("leader")
	} else if o.ok {
		o.key("leader")
		l := newObject(o.b)
		l.leader(d.Leader)
		o.b, o.ok = l.end()
	}
	o.holders(d.Holders)
	o.omitEmpty("token", d.Token)
	return o.end()
}

// appendJSON writes the answer of a leader read.
func (d leaderDoc) appendJSON(b []byte) ([]byte, bool) {
	o := newObject(b)
	o.str("election", d.Election)
	o.uint("term", d.Term)
	o.str("id", d.ID)
	o.raw("metadata", d.Metadata)
	o.str("since", d.Since)
	o.str("expires_at", d.ExpiresAt)
	o.holders(d.Holders)
	return o.end()
}

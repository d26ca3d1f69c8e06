package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultMaxBodyBytes caps a request body unless Config says otherwise.
const DefaultMaxBodyBytes int64 = 64 << 10

// jsonObject is a decoded request body: its members, still encoded.
type jsonObject map[string]json.RawMessage

// readObject reads r's body as one JSON object whose members are all in
// known. mediaTypes are the accepted Content-Types; a request without a
// Content-Type is read as JSON too, so that a plain `curl --data` works.
// An empty body is an empty object when emptyOK, else malformed-json.
// Errors: unsupported-media-type, body-too-large (an *http.MaxBytesError),
// request-timeout, malformed-body, malformed-json, invalid-request (an
// unknown member, or a member that is not valid UTF-8).
func (a *api) readObject(w http.ResponseWriter, r *http.Request, known []string, emptyOK bool, mediaTypes ...string) (jsonObject, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.cfg.MaxBodyBytes))
	if err != nil {
		return nil, a.bodyError(err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return jsonObject{}, nil
		}
		return nil, errorf("malformed-json", "the request body is empty; send a JSON object with the members %s", strings.Join(known, ", "))
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !slices.Contains(mediaTypes, mt) {
			return nil, errorf("unsupported-media-type", "Content-Type %q is not accepted here; send %s", ct, strings.Join(mediaTypes, " or "))
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var obj jsonObject
	if err := dec.Decode(&obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, errorf("malformed-json", "the request body must be a JSON object, not a JSON %s", te.Value)
		}
		return nil, errorf("malformed-json", "the request body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if obj == nil {
		return nil, errorf("malformed-json", "the request body must be a JSON object, not null")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf("malformed-json", "the request body has data after its JSON object")
	}
	var unknown []string
	for k := range obj {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, invalidField(clip(unknown[0]), "is not a known member; the known members are %s", strings.Join(known, ", "))
	}
	if err := obj.checkUTF8(""); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkUTF8 refuses a member whose text is not valid UTF-8, naming it
// (prefix.member, down to the innermost object member). Go's JSON decoder
// would silently turn the bytes into U+FFFD; every member is refused
// alike, so that a reason is treated as metadata is.
func (o jsonObject) checkUTF8(prefix string) error {
	var bad []string
	for k, v := range o {
		if !utf8.Valid(v) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	name := prefix + clip(bad[0])
	var inner jsonObject
	if json.Unmarshal(o[bad[0]], &inner) == nil && inner != nil {
		if err := inner.checkUTF8(name + "."); err != nil {
			return err // the innermost member at fault: webhook.url
		}
	}
	return invalidField(name, "must be valid UTF-8")
}

// isNull reports whether a member is absent or JSON null.
func (o jsonObject) isNull(name string) bool {
	raw, ok := o[name]
	return !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// string returns member name as a string ("" when absent or null).
func (o jsonObject) string(name string) (string, error) {
	if o.isNull(name) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(o[name], &s); err != nil {
		return "", invalidField(name, "must be a JSON string")
	}
	return s, nil
}

// strings returns member name as a list of strings (nil when absent or
// null).
func (o jsonObject) strings(name string) ([]string, error) {
	if o.isNull(name) {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal(o[name], &out); err != nil {
		return nil, invalidField(name, "must be a JSON array of strings")
	}
	return out, nil
}

// object returns member name as an object whose members are all in known
// (nil when absent or null). Errors name the member as name.member.
func (o jsonObject) object(name string, known []string) (jsonObject, error) {
	if o.isNull(name) {
		return nil, nil
	}
	var obj jsonObject
	if err := json.Unmarshal(o[name], &obj); err != nil || obj == nil {
		return nil, invalidField(name, "must be a JSON object with the members %s", strings.Join(known, ", "))
	}
	for k := range obj {
		if !slices.Contains(known, k) {
			return nil, invalidField(name+"."+clip(k), "is not a known member; the known members are %s", strings.Join(known, ", "))
		}
	}
	if err := obj.checkUTF8(name + "."); err != nil {
		return nil, err
	}
	return obj, nil
}

// integer returns member name as an integer (0 when absent or null).
func (o jsonObject) integer(name string) (int, error) {
	if o.isNull(name) {
		return 0, nil
	}
	var n int
	if err := json.Unmarshal(o[name], &n); err != nil {
		return 0, invalidField(name, "must be a JSON integer")
	}
	return n, nil
}

// boolean returns member name as a bool and whether it was given (neither
// absent nor null).
func (o jsonObject) boolean(name string) (b, given bool, err error) {
	if o.isNull(name) {
		return false, false, nil
	}
	if err := json.Unmarshal(o[name], &b); err != nil {
		return false, false, invalidField(name, "must be true or false")
	}
	return b, true, nil
}

// duration returns member name, a Go duration string such as "10s", and
// whether it was given (neither absent nor null).
func (o jsonObject) duration(name string) (time.Duration, bool, error) {
	if o.isNull(name) {
		return 0, false, nil
	}
	var s string
	if err := json.Unmarshal(o[name], &s); err != nil {
		return 0, false, invalidField(name, `must be a duration string such as "10s", "1m30s" or "500ms"`)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false, invalidField(name, `%q is not a duration; use a string such as "10s", "1m30s" or "500ms"`, clip(s))
	}
	return d, true, nil
}

// query parses r's query string strictly: a malformed percent-escape or a
// ';' separator is refused (r.URL.Query would drop the pair, and with it
// the client's intent), naming the parameter it is in, or "query".
func query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err == nil {
		return q, nil
	}
	field := "query"
	for _, pair := range strings.Split(r.URL.RawQuery, "&") {
		k, v, _ := strings.Cut(pair, "=")
		if _, kerr := url.QueryUnescape(k); kerr != nil {
			break
		}
		if _, verr := url.QueryUnescape(v); verr != nil {
			if name, _ := url.QueryUnescape(k); name != "" {
				field = name // a value without a name stays "query"
			}
			break
		}
	}
	return nil, invalidField(clip(field), "cannot be read from the query string (%s); escape %% as %%25 and separate parameters with &", clip(err.Error()))
}

// Header values writeJSON sets, shared by every answer (net/http only
// reads them; a full slice makes an append copy).
var (
	jsonContentType = []string{"application/json"}[:1:1]
	noStore         = []string{"no-store"}[:1:1]
)

// writeJSON writes v as the JSON response with status: by hand for the
// answers that write themselves (encode.go), else with encoding/json.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if a, ok := v.(jsonAppender); ok {
		writeDoc(w, status, a)
		return
	}
	writeMarshaled(w, status, v)
}

// writeDoc writes an answer that writes itself as JSON (encode.go), into a
// buffer of a pool, or with encoding/json when it cannot. The hot paths
// call it with their answer's own type, which is then not boxed.
func writeDoc[T jsonAppender](w http.ResponseWriter, status int, v T) {
	buf := jsonBufs.Get().(*[]byte)
	b, ok := v.appendJSON((*buf)[:0])
	if ok {
		b = append(b, '\n')
		writeBody(w, status, b)
	}
	if cap(b) <= maxPooledJSON {
		*buf = b[:0]
		jsonBufs.Put(buf)
	}
	if !ok {
		writeMarshaled(w, status, v)
	}
}

// writeMarshaled writes v as the JSON answer with status, by encoding/json.
func writeMarshaled(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, Problem{Type: ProblemTypePrefix + "internal", Title: "Internal error", Status: http.StatusInternalServerError,
			Detail: fmt.Sprintf("the response could not be encoded: %v", err)})
		return
	}
	writeBody(w, status, append(b, '\n'))
}

// jsonBufs are the buffers answers are written into; net/http copies an
// answer before Write returns, so a buffer is free again after it.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledJSON is the largest buffer kept in jsonBufs: a rare large
// answer (many holders, large metadata) is not kept for every later one.
const maxPooledJSON = 16 << 10

// writeBody writes b as the JSON answer with status.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Cache-Control"] = noStore
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// clip shortens a value quoted back to the client.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

package proxy

import (
	"encoding/json"
	"net"
	"net/url"
	"strings"
	"testing"
)

func TestLeaderTargetTakesOnlyWhatTheLeaderRegistered(t *testing.T) {
	tests := []struct {
		metadata string
		want     string // the target, or "" when refused
		why      string // a part of the refusal
	}{
		{`{"addr":"10.0.0.7:8080"}`, "http://10.0.0.7:8080", ""},
		{`{"addr":"billing-0.billing.default.svc:8080"}`, "http://billing-0.billing.default.svc:8080", ""},
		{`{"addr":"[fd00::7]:8080"}`, "http://[fd00::7]:8080", ""},
		{`{"addr":"http://10.0.0.7"}`, "http://10.0.0.7", ""},
		{`{"addr":"https://node-a.example:8443/api/"}`, "https://node-a.example:8443/api/", ""},
		{`{"addr":"http://127.0.0.1:9001","other":1}`, "http://127.0.0.1:9001", ""},
		{``, "", "registered no metadata"},
		{`null`, "", "registered no metadata"},
		{`[1]`, "", "not a JSON object"},
		{`{}`, "", `has no "addr"`},
		{`{"address":"10.0.0.7:8080"}`, "", `has no "addr"`},
		{`{"addr":8080}`, "", "not a string"},
		{`{"addr":null}`, "", "not a string"},
		{`{"addr":""}`, "", "neither host:port nor an http(s) URL"},
		{`{"addr":"10.0.0.7"}`, "", "neither host:port nor an http(s) URL"},
		{`{"addr":":8080"}`, "", "has no host"},
		{`{"addr":"0.0.0.0:8080"}`, "", "unspecified host"},
		{`{"addr":"[::]:8080"}`, "", "unspecified host"},
		{`{"addr":"10.0.0.7:0"}`, "", "want 1 to 65535"},
		{`{"addr":"10.0.0.7:65536"}`, "", "want 1 to 65535"},
		{`{"addr":"10.0.0.7:http"}`, "", "want 1 to 65535"},
		{`{"addr":"10.0.0.7:-1"}`, "", "want 1 to 65535"},
		{`{"addr":"ftp://10.0.0.7:21"}`, "", `scheme "ftp"`},
		{`{"addr":"unix:///run/app.sock"}`, "", `scheme "unix"`},
		{`{"addr":"http://user:pw@10.0.0.7:8080"}`, "", "user information"},
		{`{"addr":"http://10.0.0.7:8080/?to=evil"}`, "", "query or a fragment"},
		{`{"addr":"http://10.0.0.7:8080/#x"}`, "", "query or a fragment"},
		{`{"addr":"http://10.0.0.7:/"}`, "", "empty port"},
		{`{"addr":"http:///path"}`, "", "has no host"},
		{`{"addr":"http://evil.example%2f@x:80"}`, "", ""},
		{`{"addr":"10.0.0.7:8080 "}`, "", "space or a control character"},
		{`{"addr":"node\u0000a:80"}`, "", "control character"},
		{`{"addr":"n_de/a:80"}`, "", "neither an IP address nor a host name"},
		{`{"addr":"a..b:80"}`, "", "empty label"},
		{`{"addr":"http://[fe80::1%25eth0]:80"}`, "", "neither an IP address nor a host name"},
		{`{"addr":"` + strings.Repeat("a", 600) + `:80"}`, "", "longer than 512 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.metadata, func(t *testing.T) {
			u, err := LeaderTarget(json.RawMessage(tt.metadata), "addr")
			switch {
			case tt.want != "" && (err != nil || u.String() != tt.want):
				t.Fatalf("got %v, %v; want %s", u, err, tt.want)
			case tt.want == "" && err == nil:
				t.Fatalf("got %v; want it refused", u)
			case tt.want == "" && !strings.Contains(err.Error(), tt.why):
				t.Fatalf("refused with %q; want it to say %q", err, tt.why)
			}
		})
	}
}

// FuzzLeaderTarget: whatever a candidate registers, the proxy either
// refuses it or forwards to an http(s) URL naming a host, with no user,
// query or fragment, that parses back to itself.
func FuzzLeaderTarget(f *testing.F) {
	for _, s := range []string{"10.0.0.7:8080", "http://a:1/p", "https://[::1]:443", ":80", "http://u@h:1", "h:1?x", "HTTP://H:1", "http://h:1/%2f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		md, err := json.Marshal(map[string]string{"addr": addr})
		if err != nil {
			return
		}
		u, err := LeaderTarget(md, "addr")
		if err != nil {
			return
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			t.Fatalf("%q gave target %#v", addr, u)
		}
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
			t.Fatalf("%q gave the unspecified host of %s", addr, u)
		}
		back, err := url.Parse(u.String())
		if err != nil || back.Host != u.Host || back.Scheme != u.Scheme {
			t.Fatalf("%q gave %s, which parses back as %#v (%v)", addr, u, back, err)
		}
	})
}

package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestEndStreamsOnCancelsOnlyEventStreams(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		accept string
		ended  bool
	}{
		{"election events", http.MethodGet, "/v1/elections/a/events", "", true},
		{"all events", http.MethodGet, "/v1/events", "", true},
		{"accept event stream", http.MethodGet, "/v1/other", "text/event-stream", true},
		{"leader", http.MethodGet, "/v1/elections/a/leader", "", false},
		{"campaign", http.MethodPost, "/v1/elections/events/candidates", "", false},
		{"post to events", http.MethodPost, "/v1/events", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stop, end := context.WithCancel(context.Background())
			var ended bool
			h := endStreamsOn(stop, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				end()
				// The cancellation runs in its own goroutine: wait for it
				// where it is expected, give it a moment where it is not.
				wait := 50 * time.Millisecond
				if tt.ended {
					wait = 10 * time.Second
				}
				select {
				case <-r.Context().Done():
					ended = true
				case <-time.After(wait):
				}
			}))
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if ended != tt.ended {
				t.Errorf("request context ended: %v, want %v", ended, tt.ended)
			}
		})
	}
}

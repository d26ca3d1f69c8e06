package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/electorhq/elector/gateway"
)

// Values of the consistency query parameter of the reads of elections.
const (
	consistencyLinearizable = "linearizable" // the default: after a read index
	consistencyLocal        = "local"        // from the replica's copy as it is
)

// readContext returns the context a read of elections runs in: the
// request's, marked for a local read (gateway.WithLocalRead) when the
// query says consistency=local. A consistency that is neither value, or
// given twice, or a query string that cannot be read when it names
// consistency, is refused naming it. A query string that does not name it
// is not parsed: these reads ignored their query string before they had a
// parameter, and go on doing so for any other (and the leader read, the
// hottest path of the API, pays nothing for it).
func readContext(r *http.Request) (context.Context, error) {
	switch r.URL.RawQuery {
	case "consistency=" + consistencyLocal: // the common case, without parsing
		return gateway.WithLocalRead(r.Context()), nil
	case "consistency=" + consistencyLinearizable:
		return r.Context(), nil
	}
	if !strings.Contains(r.URL.RawQuery, "consistency") {
		return r.Context(), nil
	}
	q, err := query(r)
	if err != nil {
		return nil, err
	}
	vs, given := q["consistency"]
	switch {
	case !given:
		return r.Context(), nil
	case len(vs) > 1:
		return nil, invalidField("consistency", "is given %d times; give it once", len(vs))
	}
	switch vs[0] {
	case consistencyLinearizable:
		return r.Context(), nil
	case consistencyLocal:
		return gateway.WithLocalRead(r.Context()), nil
	}
	return nil, invalidField("consistency", "%q is not a consistency; use %q (the default) or %q", clip(vs[0]), consistencyLinearizable, consistencyLocal)
}

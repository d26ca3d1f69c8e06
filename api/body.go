package api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// DefaultBodyTimeout bounds the time to read a request body unless Config
// says otherwise.
const DefaultBodyTimeout = 10 * time.Second

// limitBodyTime bounds the time a request's body may take to arrive: from
// the moment the handler starts, Config.BodyTimeout. A body that stalls
// fails its read with a deadline error, which readObject answers with 408
// request-timeout, and the connection is closed after the answer. The
// deadline is lifted as soon as the body has been read to its end, so that
// it never cuts a slow handler or an event stream (requests without a body
// get no deadline at all). It is a per-request read deadline rather than
// http.Server.ReadTimeout because the latter would also end every event
// stream after that long.
func (a *api) limitBodyTime(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(a.cfg.BodyTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the connection's read deadline once the body has
// been read to its end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}

// bodyError classifies an error reading a request body: a body over the
// size limit stays an *http.MaxBytesError (413 body-too-large), a body
// that did not arrive in time is 408 request-timeout, and anything else
// (malformed chunked framing, a body cut short by a client that went
// away) is the client's doing: 400 malformed-body, never a server error.
func (a *api) bodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errorf("request-timeout", "the request body did not arrive within %s; send the whole body at once", a.cfg.BodyTimeout)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf("malformed-body", "the request body ended before its announced length (Content-Length or chunked framing)")
	default:
		return errorf("malformed-body", "the request body could not be read: %s", clip(err.Error()))
	}
}

package nats

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// subjects is the layout of the backend's streams and subjects, under
// Config.Stream S (default ELECTOR) and Config.SubjectPrefix P (default
// elector):
//
//	S          P.election.<election>        the election's records (record.go)
//	S_ALIVE    P.alive.<election>.<nonce>   a candidacy's liveness message (liveness.go)
//	           P.alive._.epoch              the liveness stream's epoch (epoch.go)
//	           P.alive._.clock              reads of the server's clock (expiry.go)
//	S_TIMERS   P.timer.<election>.<token>   a running timer's marker (timers.go)
//	KV_S_KV    $KV.S_KV.<key>               the gateway.KV (kv.go)
//
// Election names start with a letter or digit, so "_" names no election.
type subjects struct{ stream, prefix string }

func (n subjects) aliveStream() string { return n.stream + "_ALIVE" }
func (n subjects) timerStream() string { return n.stream + "_TIMERS" }

// kvBucket is the name of the backend's KV bucket; its stream is
// "KV_" + kvBucket, its subjects "$KV.<bucket>.<key>".
func (n subjects) kvBucket() string { return n.stream + "_KV" }

// kvStream is the name of the KV bucket's stream.
func (n subjects) kvStream() string { return "KV_" + n.kvBucket() }

func (n subjects) record(election string) string { return n.prefix + ".election." + election }

func (n subjects) alive(election, nonce string) string {
	return n.prefix + ".alive." + election + "." + nonce
}

// timer is the subject of a running timer's marker; token names the timer
// (timers.go).
func (n subjects) timer(election, token string) string {
	return n.prefix + ".timer." + election + "." + token
}

// epoch is the liveness subject of the epoch message (epoch.go).
func (n subjects) epoch() string { return n.alive("_", "epoch") }

// clock is the liveness subject of the messages that read the server's
// clock (serverNow).
func (n subjects) clock() string { return n.alive("_", "clock") }

// isTimer reports whether subject is a timer's.
func (n subjects) isTimer(subject string) bool { return strings.HasPrefix(subject, n.prefix+".timer.") }

// electionOf returns the election of a record subject.
func (n subjects) electionOf(subject string) string {
	return strings.TrimPrefix(subject, n.prefix+".election.")
}

// aliveParts splits a liveness subject into its election and nonce.
func (n subjects) aliveParts(subject string) (election, nonce string, ok bool) {
	return n.parts(subject, ".alive.")
}

// timerParts splits a timer subject into its election and token.
func (n subjects) timerParts(subject string) (election, token string, ok bool) {
	return n.parts(subject, ".timer.")
}

func (n subjects) parts(subject, kind string) (election, last string, ok bool) {
	rest, ok := strings.CutPrefix(subject, n.prefix+kind)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, ".")
}

// nonce names one candidacy in liveness subjects: a hash of its token hash,
// so that a resigned candidacy's late marker cannot expire a new candidacy
// with the same id, and so that subjects reveal nothing that checks a token.
func nonce(tokenHash string) string {
	var buf [24]byte
	return string(appendNonce(buf[:0], tokenHash))
}

// appendNonce appends nonce(tokenHash) to dst, allocating nothing for a
// token hash of the usual size.
func appendNonce(dst []byte, tokenHash string) []byte {
	var buf [128]byte
	sum := sha256.Sum256(append(append(buf[:0], "elector liveness\x00"...), tokenHash...))
	return hex.AppendEncode(dst, sum[:12])
}

package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
)

// tokenPrefix marks candidate tokens so that a leaked one is recognisable
// (secret scanners, log reviews).
const tokenPrefix = "ect_"

// NewToken returns a fresh candidate token: 256 random bits.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashToken is what backends store and compare instead of the token itself,
// so that reading the backend does not give anybody the power to resign a
// candidate.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// TokenMatches compares two token hashes in constant time. Backends use it
// to check the tokenHash of Heartbeat, Resign and ReportError.
func TokenMatches(stored, given string) bool {
	return subtle.ConstantTimeCompare([]byte(stored), []byte(given)) == 1
}

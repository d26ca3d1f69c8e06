// Package fielderr reports a field of a component's configuration that
// cannot work. The error names the field, and the fields its message
// refers to, by their Go names ("ClaimTTL"), so that a program exposing
// the fields under names of its own (elector serve's settings keys, such
// as webhooks.claim_ttl) can name them as its user wrote them:
//
//	err := fielderr.Errorf("ClaimTTL", "%s is less than twice {RequestTimeout} (%s)", claim, timeout)
//	err.Error()                 // ClaimTTL: 15s is less than twice RequestTimeout (10s)
//	err.Name(keyOf)             // webhooks.claim_ttl: 15s is less than twice webhooks.request_timeout (10s)
package fielderr

// Package ctxwait holds the one wait the gateway's background loops share:
// a pause that ends early when its context does, so that a loop retrying
// a watch or a stream stops at once on shutdown.
package ctxwait

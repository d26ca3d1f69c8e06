package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/electorhq/elector/api"
)

// runToken is `elector token new` (a fresh API token and its SHA-256 for
// auth.tokens) and `elector token hash` (the SHA-256 of a token read from
// stdin, so that it stays out of the shell history).
func runToken(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const about = `Commands:
  new    print a fresh API token (token:) and its SHA-256 (sha256:), for
         auth.tokens: give the token to the client, the hash to the gateway
  hash   print the SHA-256 of the token on stdin, e.g. elector token hash < token-file`
	args, code, ok := plainFlags("token", "new | hash", about, args, 1, stderr)
	if !ok {
		return code
	}
	if len(args) != 1 || (args[0] != "new" && args[0] != "hash") {
		fmt.Fprintf(stderr, "Usage: elector token new | hash\n\n%s\n", about)
		return 2
	}
	var tok string
	if args[0] == "new" {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		tok = "eat_" + base64.RawURLEncoding.EncodeToString(b)
		fmt.Fprintf(stdout, "token:  %s\nsha256: %s\n", tok, api.HashAPITokenHex(tok))
		return 0
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if tok = strings.TrimSpace(line); tok == "" {
		fmt.Fprintf(stderr, "elector token hash: no token on stdin (%v)\n", err)
		return 1
	}
	fmt.Fprintln(stdout, api.HashAPITokenHex(tok))
	return 0
}

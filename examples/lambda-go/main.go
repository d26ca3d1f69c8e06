package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	r, err := NewReceiver(strings.Fields(os.Getenv("ELECTOR_WEBHOOK_SECRET")), NewMemoryStore(), log)
	if err != nil {
		log.Error("cannot start", slog.Any("err", err))
		os.Exit(1)
	}
	lambda.Start(r.Handle)
}

// Command lambda-go is an elector webhook receiver for AWS Lambda behind a
// function URL. It verifies each delivery's Standard Webhooks signature
// against ELECTOR_WEBHOOK_SECRET (several secrets, space-separated, while
// one is rotated), drops duplicates by webhook-id and events of a term
// older than one it has acted on, and logs and answers what it did:
//
//	{"result":"applied","election":"billing","type":"leader.begin","term":2,"candidate":"node-b",
//	 "action":"node-b leads billing in term 2"}
//
// Build and deploy (arm64, the provided.al2023 runtime):
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap .
//	zip function.zip bootstrap
//
// (Inside a checkout of elector, set GOWORK=off: this directory is a
// module of its own, outside the repository's go.work.)
//
// then create the function with a function URL (auth type NONE: the
// signature is the authentication) and subscribe the URL:
//
//	curl -s --json '{"url": "https://….lambda-url.….on.aws/", "types": ["leader.begin", "leader.end"]}' \
//	  http://127.0.0.1:8080/v1/elections/billing/subscriptions | jq -r .secret
//
// The de-duplication store here is the function instance's memory, which
// a cold start forgets and which instances do not share; in production
// keep it in DynamoDB (a conditional put of the webhook-id, and of the
// highest term per election), behind the same Store interface.
package main

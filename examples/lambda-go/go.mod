module github.com/electorhq/elector/examples/lambda-go

go 1.26

require github.com/aws/aws-lambda-go v1.55.1

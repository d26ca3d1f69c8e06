module github.com/electorhq/elector/client

go 1.22

module github.com/rmmgo/rmmgo

go 1.23

require (
	github.com/mattn/go-pointer v0.0.1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)

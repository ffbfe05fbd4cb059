module github.com/handset-voice/handset

go 1.26.8

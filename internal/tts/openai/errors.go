package openai

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

"""Text statistics of a response (reflection keywords, length, repetition, format flags), every
scan linear in the text. Imports no service, transport or engine."""

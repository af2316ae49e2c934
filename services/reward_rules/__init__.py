"""Rule graders: format/length/repetition rules, math answers, code tests."""

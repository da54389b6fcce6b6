package tools

// seccompHeaderNumbers are the numbers of arm64's calls: those both
// architectures have.
func seccompHeaderNumbers() map[string]int { return seccompCommonNumbers }

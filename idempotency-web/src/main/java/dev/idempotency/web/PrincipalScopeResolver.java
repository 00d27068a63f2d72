package dev.idempotency.web;

import java.security.Principal;

import jakarta.servlet.http.HttpServletRequest;

/**
 * Scopes keys by principal name. The prefix keeps principal scopes apart from scopes that
 * other resolvers produce, and from the global scope.
 */
final class PrincipalScopeResolver implements IdempotencyScopeResolver {

	static final PrincipalScopeResolver INSTANCE = new PrincipalScopeResolver();

	private PrincipalScopeResolver() {
	}

	@Override
	public String resolve(HttpServletRequest request) {
		Principal principal = request.getUserPrincipal();
		return (principal != null && principal.getName() != null) ? "principal:" + principal.getName() : "";
	}

}

package dev.idempotency.web;

import java.security.Principal;

import jakarta.servlet.http.HttpServletRequest;

/**
 * Scopes keys by principal name: the scope of a signed-in user's keys is the user's name
 * as {@link HttpServletRequest#getUserPrincipal()} gives it, so that an operator finds
 * them under that name. Anonymous requests, and a principal without a name, have the
 * global scope.
 */
final class PrincipalScopeResolver implements IdempotencyScopeResolver {

	static final PrincipalScopeResolver INSTANCE = new PrincipalScopeResolver();

	private PrincipalScopeResolver() {
	}

	@Override
	public String resolve(HttpServletRequest request) {
		Principal principal = request.getUserPrincipal();
		return (principal != null && principal.getName() != null) ? principal.getName() : "";
	}

}

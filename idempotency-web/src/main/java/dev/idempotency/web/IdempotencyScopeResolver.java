package dev.idempotency.web;

import jakarta.servlet.http.HttpServletRequest;

/**
 * Resolves the scope of an idempotency key. The same key in two scopes is two unrelated
 * keys, and a scope never sees another's responses: resolve to the user, the tenant or
 * the API client on whose behalf the request runs.
 *
 * @since 0.1.0
 */
@FunctionalInterface
public interface IdempotencyScopeResolver {

	/**
	 * Resolve the scope of a request.
	 * @param request the request
	 * @return the scope; empty for the global scope
	 */
	String resolve(HttpServletRequest request);

	/**
	 * The default: the name of the authenticated principal
	 * ({@link HttpServletRequest#getUserPrincipal()}, which Spring Security fills), such
	 * as {@code alice}, or the global scope (empty) for anonymous requests.
	 * @return the resolver
	 */
	static IdempotencyScopeResolver principalOrGlobal() {
		return PrincipalScopeResolver.INSTANCE;
	}

	/**
	 * One scope for all requests.
	 * @return the resolver
	 */
	static IdempotencyScopeResolver global() {
		return (request) -> "";
	}

}

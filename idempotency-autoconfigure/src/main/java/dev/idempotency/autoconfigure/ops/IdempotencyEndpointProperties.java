package dev.idempotency.autoconfigure.ops;

import java.util.LinkedHashSet;
import java.util.Set;

import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration properties of the {@code idempotency} actuator endpoint. Its exposure and
 * access are Spring Boot's {@code management.endpoints.web.exposure.*} and
 * {@code management.endpoint.idempotency.access}.
 *
 * @since 0.1.0
 */
@ConfigurationProperties("idempotency.endpoint")
public class IdempotencyEndpointProperties {

	/**
	 * When a key's stored response body and header values are shown: never,
	 * when-authorized (to an authenticated caller in one of the roles) or always. They
	 * may hold personal data.
	 */
	private Show showBody = Show.NEVER;

	/**
	 * Roles that authorize a caller to see stored bodies when show-body is
	 * when-authorized. When empty, any authenticated caller is authorized.
	 */
	private Set<String> roles = new LinkedHashSet<>();

	public Show getShowBody() {
		return this.showBody;
	}

	public void setShowBody(Show showBody) {
		this.showBody = showBody;
	}

	public Set<String> getRoles() {
		return this.roles;
	}

	public void setRoles(Set<String> roles) {
		this.roles = roles;
	}

}

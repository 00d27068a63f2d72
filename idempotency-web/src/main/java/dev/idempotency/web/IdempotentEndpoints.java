package dev.idempotency.web;

import java.io.IOException;
import java.lang.reflect.Method;
import java.util.Collection;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.idempotency.core.IdempotencyConfigurationException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.jspecify.annotations.Nullable;

import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.http.HttpEntity;
import org.springframework.http.server.RequestPath;
import org.springframework.util.ClassUtils;
import org.springframework.util.StringValueResolver;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.cors.CorsConfiguration;
import org.springframework.web.cors.CorsConfigurationSource;
import org.springframework.web.cors.CorsProcessor;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerExecutionChain;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.servlet.HandlerMapping;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping;
import org.springframework.web.util.ServletRequestPathUtils;

/**
 * Finds the {@link Idempotent @Idempotent} handler method that will serve a request,
 * before the {@code DispatcherServlet} runs, and checks every annotated method once at
 * startup.
 */
final class IdempotentEndpoints {

	/**
	 * Return types whose body is produced after the handler returns, on another thread or
	 * as a stream: the library cannot hold such a response until its commit.
	 */
	private static final List<String> ASYNC_TYPES = List.of("java.util.concurrent.Callable",
			"java.util.concurrent.Future", "java.util.concurrent.CompletionStage",
			"org.springframework.web.context.request.async.DeferredResult",
			"org.springframework.web.context.request.async.WebAsyncTask",
			"org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter",
			"org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody",
			"org.reactivestreams.Publisher", "reactor.core.publisher.Flux", "reactor.core.publisher.Mono",
			"kotlinx.coroutines.flow.Flow");

	private final List<RequestMappingInfoHandlerMapping> mappings;

	private final Map<Method, IdempotentEndpoint> endpoints;

	private final Set<String> methods;

	private final boolean anyMethod;

	IdempotentEndpoints(Collection<? extends HandlerMapping> candidates) {
		this(candidates, (text) -> text);
	}

	/**
	 * Find the annotated handlers among the candidates.
	 * @param placeholders resolves the placeholders of the annotations' durations
	 */
	IdempotentEndpoints(Collection<? extends HandlerMapping> candidates, StringValueResolver placeholders) {
		this.mappings = candidates.stream()
			.filter(RequestMappingInfoHandlerMapping.class::isInstance)
			.map(RequestMappingInfoHandlerMapping.class::cast)
			.toList();
		this.endpoints = new HashMap<>();
		Set<RequestMethod> httpMethods = EnumSet.noneOf(RequestMethod.class);
		boolean any = false;
		ClassLoader classLoader = getClass().getClassLoader();
		for (RequestMappingInfoHandlerMapping mapping : this.mappings) {
			for (Map.Entry<RequestMappingInfo, HandlerMethod> entry : mapping.getHandlerMethods().entrySet()) {
				HandlerMethod handlerMethod = entry.getValue();
				Idempotent annotation = AnnotatedElementUtils.findMergedAnnotation(handlerMethod.getMethod(),
						Idempotent.class);
				if (annotation == null) {
					continue;
				}
				String name = handlerMethod.getShortLogMessage();
				checkReturnType(handlerMethod, name, classLoader);
				this.endpoints.put(handlerMethod.getMethod(), IdempotentEndpoint.of(name, handlerMethod.getMethod(),
						handlerMethod.getBeanType(), annotation, placeholders));
				Set<RequestMethod> declared = entry.getKey().getMethodsCondition().getMethods();
				if (declared.isEmpty()) {
					any = true;
				}
				httpMethods.addAll(declared);
			}
		}
		Set<String> names = new HashSet<>();
		httpMethods.forEach((method) -> names.add(method.name()));
		if (names.contains(RequestMethod.GET.name())) {
			// Spring MVC serves HEAD with the GET handler.
			names.add(RequestMethod.HEAD.name());
		}
		this.methods = names;
		this.anyMethod = any;
	}

	boolean isEmpty() {
		return this.endpoints.isEmpty();
	}

	Collection<IdempotentEndpoint> all() {
		return this.endpoints.values();
	}

	/**
	 * Find the annotated handler that will serve the request, with its route.
	 */
	@Nullable Match find(HttpServletRequest request) {
		if (this.endpoints.isEmpty() || (!this.anyMethod && !this.methods.contains(request.getMethod()))) {
			return null;
		}
		RequestPath previous = ServletRequestPathUtils.hasParsedRequestPath(request)
				? ServletRequestPathUtils.getParsedRequestPath(request) : null;
		ServletRequestPathUtils.parseAndCache(request);
		try {
			for (RequestMappingInfoHandlerMapping mapping : this.mappings) {
				HandlerExecutionChain chain;
				try {
					chain = mapping.getHandler(request);
				}
				catch (Exception ex) {
					// No match (wrong method, media type...): the DispatcherServlet will
					// answer, and nothing runs.
					return null;
				}
				if (chain == null) {
					continue;
				}
				if (!(chain.getHandler() instanceof HandlerMethod handlerMethod)) {
					return null;
				}
				IdempotentEndpoint endpoint = this.endpoints.get(handlerMethod.getMethod());
				if (endpoint == null) {
					return null;
				}
				Object pattern = request.getAttribute(HandlerMapping.BEST_MATCHING_PATTERN_ATTRIBUTE);
				return new Match(endpoint, (pattern != null) ? pattern.toString() : "", handlerMethod,
						cors(mapping, chain, request));
			}
			return null;
		}
		finally {
			if (previous != null) {
				ServletRequestPathUtils.setParsedRequestPath(previous, request);
			}
			else {
				ServletRequestPathUtils.clearParsedRequestPath(request);
			}
		}
	}

	/**
	 * The CORS configuration that Spring MVC applies to the handler (global mappings and
	 * {@code @CrossOrigin}), found as Spring MVC finds it: on the interceptor that the
	 * mapping puts in the handler's chain.
	 */
	private static @Nullable Cors cors(RequestMappingInfoHandlerMapping mapping, HandlerExecutionChain chain,
			HttpServletRequest request) {
		for (HandlerInterceptor interceptor : chain.getInterceptorList()) {
			if (interceptor instanceof CorsConfigurationSource source) {
				CorsConfiguration configuration = source.getCorsConfiguration(request);
				if (configuration != null) {
					return new Cors(mapping.getCorsProcessor(), configuration);
				}
			}
		}
		return null;
	}

	private static void checkReturnType(HandlerMethod handlerMethod, String name, ClassLoader classLoader) {
		ResolvableType type = ResolvableType.forMethodReturnType(handlerMethod.getMethod());
		if (HttpEntity.class.isAssignableFrom(type.toClass())) {
			type = type.as(HttpEntity.class).getGeneric(0);
		}
		Class<?> returned = type.toClass();
		for (String asyncType : ASYNC_TYPES) {
			if (!ClassUtils.isPresent(asyncType, classLoader)) {
				continue;
			}
			Class<?> candidate = ClassUtils.resolveClassName(asyncType, classLoader);
			if (candidate.isAssignableFrom(returned)) {
				throw new IdempotencyConfigurationException(
						"@Idempotent handler " + name + " returns " + returned.getName()
								+ ", an asynchronous or streaming type. The library must hold the"
								+ " whole response until the transaction commits.",
						"Return the result synchronously (for example a ResponseEntity of the body), or remove"
								+ " @Idempotent.");
			}
		}
	}

	/**
	 * The handler that will serve a request.
	 *
	 * @param endpoint what its annotation asks for
	 * @param route its pattern
	 * @param handler the handler method, for the application's exception handlers
	 * @param cors the CORS configuration of the handler, if any
	 */
	record Match(IdempotentEndpoint endpoint, String route, HandlerMethod handler, @Nullable Cors cors) {

		/**
		 * Add the CORS headers that Spring MVC would add to the handler's response to an
		 * answer the filter gives itself, which Spring MVC never sees.
		 * @return {@code false} when the request's origin is refused, and the response
		 * says so
		 */
		boolean applyCors(HttpServletRequest request, HttpServletResponse response) throws IOException {
			return this.cors == null
					|| this.cors.processor().processRequest(this.cors.configuration(), request, response);
		}

	}

	record Cors(CorsProcessor processor, CorsConfiguration configuration) {
	}

}

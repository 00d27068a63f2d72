package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.web.ApplicationPaths.AccountService;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The transaction that the library opens for a handler has the isolation, read-only flag
 * and timeout that the application declares, or the request fails before any effect:
 * nothing the application declared is silently weakened. Two concurrent debits of 80 from
 * a balance of 100, each reading the balance and writing it less the amount, are correct
 * only in serializable transactions.
 */
@PostgresTest
@IdempotentHttpTest
class IdempotentHttpIsolationTests extends IdempotentHttpTestSupport {

	@Autowired
	private AccountService accounts;

	@Test
	void aHandlerDeclaredSerializableRunsInASerializableTransactionAndOnlyOneOfTwoConcurrentDebitsSucceeds()
			throws Exception {
		String account = newAccount(100);
		List<HttpResponse<byte[]>> responses = twoConcurrentDebits("/serializable/accounts/" + account + "/debits");
		assertThat(responses).filteredOn((response) -> response.statusCode() == 201)
			.singleElement()
			.satisfies((response) -> assertThat(body(response)).contains("\"isolation\":\"serializable\""));
		assertThat(responses).filteredOn((response) -> response.statusCode() != 201)
			.singleElement()
			.satisfies((response) -> assertThat(response.statusCode()).isGreaterThanOrEqualTo(500));
		assertThat(balance(account)).isEqualTo(20);
		assertThat(debits(account)).isOne();
	}

	@Test
	void aServiceDeeperDownThatAsksForAStricterIsolationFailsTheRequestBeforeAnyEffectNamingTheFix() throws Exception {
		String account = newAccount(100);
		List<HttpResponse<byte[]>> responses = twoConcurrentDebits("/accounts/" + account + "/debits");
		for (HttpResponse<byte[]> response : responses) {
			assertThat(response.statusCode()).isEqualTo(500);
			assertThat(body(response)).contains("#transaction-incompatible").contains("@Transactional(isolation");
		}
		assertThat(balance(account)).isEqualTo(100);
		assertThat(debits(account)).isZero();
	}

	@Test
	void theHandlersIsolationAppliesToASingleTransactionClaimToo() {
		HttpResponse<byte[]> response = this.http.post("/repeatable/isolation", "{}", "Idempotency-Key",
				UUID.randomUUID().toString());
		assertThat(response.statusCode()).isEqualTo(200);
		assertThat(body(response)).isEqualTo("repeatable read");
	}

	@Test
	void theHandlersTimeoutAppliesToTheLibrarysTransaction() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> response = this.http.post("/timeout", "{}", "Idempotency-Key", key);
		assertThat(response.statusCode()).isGreaterThanOrEqualTo(500);
		assertThat(keyRows(key)).isZero();
	}

	/**
	 * Send two debits of 80 with different keys at once; each reads the balance before
	 * either writes.
	 */
	private List<HttpResponse<byte[]>> twoConcurrentDebits(String path) throws Exception {
		this.accounts.expectConcurrentDebits(2);
		Future<HttpResponse<byte[]>> first = this.executor
			.submit(() -> this.http.post(path, "{\"amount\":80}", "Idempotency-Key", UUID.randomUUID().toString()));
		Future<HttpResponse<byte[]>> second = this.executor
			.submit(() -> this.http.post(path, "{\"amount\":80}", "Idempotency-Key", UUID.randomUUID().toString()));
		return List.of(first.get(60, TimeUnit.SECONDS), second.get(60, TimeUnit.SECONDS));
	}

	private String newAccount(int balance) {
		String account = unique("account");
		this.jdbc.update("INSERT INTO accounts (id, balance) VALUES (?, ?)", account, balance);
		return account;
	}

	private int balance(String account) {
		Integer balance = this.jdbc.queryForObject("SELECT balance FROM accounts WHERE id = ?", Integer.class, account);
		return (balance != null) ? balance : -1;
	}

	private int debits(String account) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM debits WHERE account = ?", Integer.class,
				account);
		return (count != null) ? count : 0;
	}

}

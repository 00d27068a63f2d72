package dev.idempotency.reliability;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox relays' claims on a cluster's Kafka rows, read from its database, and the
 * kill of a relay amid them: a replica killed while both relays hold claims, and the wait
 * until the survivor's reaper has given the dead relay's claims back, never before their
 * lease ended.
 */
class RelayClaims {

	private final Cluster cluster;

	RelayClaims(Cluster cluster) {
		this.cluster = cluster;
	}

	/**
	 * SIGKILL the victim once both relays hold claims. A frozen broker keeps each relay's
	 * sends in flight up to the send timeout, so the backlog grows under the load and
	 * both relays hold claims on it.
	 * @param victim the replica to kill
	 * @param prefix the scenario's prefix of message keys
	 * @return the claims held once the victim is dead, looked at before the broker
	 * resumes (a claim the victim finished between the first look and its death is not
	 * among them), and the victim's owner token, read from its health details before the
	 * kill: only the survivor's reaper gives its claims back
	 */
	Kill killAmidClaims(Replica victim, String prefix) {
		String owner = victim.relayOwner();
		this.cluster.broker.freeze();
		try {
			awaitClaimsOfBothRelays(prefix, Duration.ofSeconds(30));
			victim.kill();
			return new Kill(claimsHeld(prefix), owner);
		}
		finally {
			this.cluster.broker.resume();
		}
	}

	/**
	 * The claims held on the scenario's Kafka rows once both relays hold some, or what is
	 * held when the bound is reached: rows PUBLISHING within their lease, by owner token.
	 */
	private Map<Long, Claim> awaitClaimsOfBothRelays(String prefix, Duration bound) {
		long deadline = System.nanoTime() + bound.toNanos();
		Map<Long, Claim> claims = new HashMap<>();
		while (System.nanoTime() < deadline) {
			claims = claimsHeld(prefix);
			if (claims.values().stream().map(Claim::owner).distinct().count() >= 2) {
				return claims;
			}
			Pause.briefly(Duration.ofMillis(100));
		}
		return claims;
	}

	/**
	 * The scenario's Kafka rows PUBLISHING within their lease, with their claims.
	 */
	private Map<Long, Claim> claimsHeld(String prefix) {
		Database db = this.cluster.database;
		Map<Long, Claim> claims = new HashMap<>();
		for (Map<String, Object> row : db.query("SELECT id, locked_by, " + db.epochMillis("locked_until")
				+ " AS lease_end FROM outbox WHERE destination = ? AND message_key LIKE ? AND status = 'PUBLISHING'"
				+ " AND locked_until > " + db.now(), Cluster.Topics.PAYMENTS_CHARGED, prefix + "-%")) {
			claims.put(((Number) row.get("id")).longValue(),
					new Claim((String) row.get("locked_by"), ((Number) row.get("lease_end")).longValue()));
		}
		return claims;
	}

	/**
	 * Wait until no claim is held any more by the owner that held it at the kill. The
	 * killed relay's can only have been given back by the survivor's reaper: none of them
	 * may be seen given back before its lease ended.
	 * @param kill the kill and the claims held at it
	 * @param bound how long to wait at most
	 * @return the killed relay's rows, taken over past their lease
	 */
	Set<Long> awaitReleased(Kill kill, Duration bound) {
		Database db = this.cluster.database;
		Map<Long, Claim> claims = kill.claims();
		Set<Long> early = new TreeSet<>();
		long deadline = System.nanoTime() + bound.toNanos();
		while (System.nanoTime() < deadline) {
			int stillHeld = 0;
			if (!claims.isEmpty()) {
				for (Map<String, Object> row : db.query("SELECT id, locked_by, status, " + db.epochMillis(db.now())
						+ " AS now FROM outbox WHERE id IN (" + Checks.idList(claims.keySet()) + ")")) {
					long id = ((Number) row.get("id")).longValue();
					Claim claim = claims.get(id);
					if ("PUBLISHING".equals(row.get("status")) && claim.owner().equals(row.get("locked_by"))) {
						stillHeld++;
					}
					else if (claim.owner().equals(kill.deadOwner()) && !"PUBLISHED".equals(row.get("status"))
							&& ((Number) row.get("now")).longValue() < claim.leaseEndMillis()) {
						// Back to PENDING or claimed again: taken over. PUBLISHED is the
						// dead
						// relay's own mark, committed as it died.
						early.add(id);
					}
				}
			}
			if (stillHeld == 0) {
				assertThat(early).as("rows of the killed relay taken over before their lease ended").isEmpty();
				return claims.entrySet()
					.stream()
					.filter((entry) -> entry.getValue().owner().equals(kill.deadOwner()))
					.map(Map.Entry::getKey)
					.collect(Collectors.toSet());
			}
			Pause.briefly(Duration.ofMillis(200));
		}
		throw new IllegalStateException("Claims of a dead relay never reaped: " + claims);
	}

	/**
	 * The claims held at a kill, by row, and the killed relay's owner token.
	 *
	 * @param claims the claims held once the victim was dead
	 * @param deadOwner the killed relay's owner token
	 */
	record Kill(Map<Long, Claim> claims, String deadOwner) {

		boolean deadHeldClaims() {
			return this.claims.values().stream().anyMatch((claim) -> claim.owner().equals(this.deadOwner));
		}

	}

	/**
	 * A row's claim: its owner token and the end of its lease, in milliseconds since the
	 * epoch of the database's clock.
	 *
	 * @param owner the relay's owner token
	 * @param leaseEndMillis the end of the lease
	 */
	record Claim(String owner, long leaseEndMillis) {

	}

}

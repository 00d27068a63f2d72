package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The combinations of a matrix suite: the whole product of its axes, or a pairwise
 * selection of it that still puts every value of each axis beside every value of every
 * other axis at least once (picked greedily, the same selection at every run).
 */
final class Pairwise {

	private Pairwise() {
	}

	/**
	 * Every combination of one value per axis, the first axis varying slowest.
	 */
	static List<List<Object>> product(List<List<?>> axes) {
		List<List<Object>> product = new ArrayList<>();
		product.add(List.of());
		for (List<?> axis : axes) {
			List<List<Object>> next = new ArrayList<>();
			for (List<Object> prefix : product) {
				for (Object value : axis) {
					List<Object> combination = new ArrayList<>(prefix);
					combination.add(value);
					next.add(combination);
				}
			}
			product = next;
		}
		return product;
	}

	/**
	 * Combinations that cover every pair of values of two axes.
	 */
	static List<List<Object>> cover(List<List<?>> axes) {
		List<List<Object>> candidates = product(axes);
		Set<List<Object>> uncovered = new HashSet<>();
		candidates.forEach((combination) -> uncovered.addAll(pairs(combination)));
		List<List<Object>> chosen = new ArrayList<>();
		while (!uncovered.isEmpty()) {
			List<Object> best = null;
			int bestCount = 0;
			for (List<Object> candidate : candidates) {
				int count = (int) pairs(candidate).stream().filter(uncovered::contains).count();
				if (count > bestCount) {
					best = candidate;
					bestCount = count;
				}
			}
			chosen.add(best);
			pairs(best).forEach(uncovered::remove);
		}
		return chosen;
	}

	/**
	 * The pairs a combination covers: (axis, value, other axis, other value).
	 */
	private static List<List<Object>> pairs(List<Object> combination) {
		List<List<Object>> pairs = new ArrayList<>();
		for (int i = 0; i < combination.size(); i++) {
			for (int j = i + 1; j < combination.size(); j++) {
				pairs.add(List.of(i, combination.get(i), j, combination.get(j)));
			}
		}
		return pairs;
	}

}

// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/*
 * The trade probe of the ERC-20 honeypot and tax check (docs/risk.md#erc-20-tokens). It is never deployed:
 * the scanner places its runtime code at two fresh addresses with a state override, for one simulation
 * on the customer's node, and reads what each step measured from the return data. Its compiled runtime
 * code is src/risk/evm/token/probe-code.ts (test/unit/risk-evm-token.test.ts recompiles this file and
 * checks that it matches).
 *
 * eth_simulateV1 runs `pool` and `buy` in one block, then `send` and `sell` in a block one hour later (delayed traps);
 * a node without it gets one eth_call of `run`, which does the three steps at once.
 */

interface IERC20Like {
    function balanceOf(address owner) external view returns (uint256);
}

interface IV2Factory {
    function getPair(address a, address b) external view returns (address);
}

interface IV2Pair {
    function getReserves() external view returns (uint112 reserve0, uint112 reserve1, uint32 timestamp);

    function token0() external view returns (address);
}

interface IV2Router {
    function WETH() external view returns (address);

    function factory() external view returns (address);

    function getAmountsOut(uint256 amountIn, address[] calldata path) external view returns (uint256[] memory);

    function swapExactETHForTokensSupportingFeeOnTransferTokens(
        uint256 amountOutMin,
        address[] calldata path,
        address to,
        uint256 deadline
    ) external payable;

    function swapExactTokensForETHSupportingFeeOnTransferTokens(
        uint256 amountIn,
        uint256 amountOutMin,
        address[] calldata path,
        address to,
        uint256 deadline
    ) external;
}

contract TradeProbe {
    /// `token`'s WETH pair on `router`'s factory (zero when there is none) and its reserves.
    function pool(
        address router,
        address token
    ) external view returns (address pair, uint256 wethReserve, uint256 tokenReserve) {
        address weth = IV2Router(router).WETH();
        pair = IV2Factory(IV2Router(router).factory()).getPair(weth, token);
        if (pair == address(0)) return (pair, 0, 0);
        (uint112 r0, uint112 r1, ) = IV2Pair(pair).getReserves();
        (wethReserve, tokenReserve) = IV2Pair(pair).token0() == weth ? (r0, r1) : (r1, r0);
    }

    /// Buys `token` with all the ether sent, through `router`'s WETH pair: what the pool quoted, what arrived.
    function buy(address router, address token) external payable returns (uint256 quoted, uint256 received) {
        address[] memory path = new address[](2);
        path[0] = IV2Router(router).WETH();
        path[1] = token;
        quoted = IV2Router(router).getAmountsOut(msg.value, path)[1];
        uint256 before = IERC20Like(token).balanceOf(address(this));
        IV2Router(router).swapExactETHForTokensSupportingFeeOnTransferTokens{value: msg.value}(
            0,
            path,
            address(this),
            block.timestamp
        );
        received = IERC20Like(token).balanceOf(address(this)) - before;
    }

    /// Sends this probe's whole balance of `token` to `to`: what was sent, what arrived.
    function send(address token, address to) external returns (uint256 sent, uint256 arrived) {
        sent = IERC20Like(token).balanceOf(address(this));
        uint256 before = IERC20Like(token).balanceOf(to);
        callToken(token, abi.encodeWithSelector(0xa9059cbb, to, sent)); // transfer(address,uint256)
        arrived = IERC20Like(token).balanceOf(to) - before;
    }

    /// Sells this probe's whole balance of `token` for ether through `router`: amount, quote, ether received.
    function sell(address router, address token) external returns (uint256 amount, uint256 quoted, uint256 received) {
        amount = IERC20Like(token).balanceOf(address(this));
        callToken(token, abi.encodeWithSelector(0x095ea7b3, router, amount)); // approve(address,uint256)
        address[] memory path = new address[](2);
        path[0] = token;
        path[1] = IV2Router(router).WETH();
        quoted = IV2Router(router).getAmountsOut(amount, path)[1];
        uint256 before = address(this).balance;
        IV2Router(router).swapExactTokensForETHSupportingFeeOnTransferTokens(
            amount,
            0,
            path,
            address(this),
            block.timestamp
        );
        received = address(this).balance - before;
    }

    /// The three steps in one call (nodes without eth_simulateV1): `stage` is the first step that reverted
    /// (1 buy, 2 send, 3 sell; 0 none), `reason` its revert data.
    function run(
        address router,
        address token,
        address second
    ) external payable returns (uint256 stage, uint256[7] memory amounts, bytes memory reason) {
        try this.buy{value: msg.value}(router, token) returns (uint256 q, uint256 r) {
            (amounts[0], amounts[1]) = (q, r);
        } catch (bytes memory err) {
            return (1, amounts, err);
        }
        try this.send(token, second) returns (uint256 s, uint256 a) {
            (amounts[2], amounts[3]) = (s, a);
        } catch (bytes memory err) {
            return (2, amounts, err);
        }
        try TradeProbe(payable(second)).sell(router, token) returns (uint256 n, uint256 q, uint256 r) {
            (amounts[4], amounts[5], amounts[6]) = (n, q, r);
        } catch (bytes memory err) {
            return (3, amounts, err);
        }
        return (0, amounts, "");
    }

    /// A token call that accepts tokens returning nothing (USDT) as well as `true`.
    function callToken(address token, bytes memory data) private {
        (bool ok, bytes memory ret) = token.call(data);
        if (!ok) {
            assembly {
                revert(add(ret, 32), mload(ret))
            }
        }
        require(ret.length == 0 || abi.decode(ret, (bool)), "token call returned false");
    }

    receive() external payable {}
}
